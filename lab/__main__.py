from lab.launch import main

main()
