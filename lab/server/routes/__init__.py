"""The server's routes, one module per concern, each a module-level APIRouter that
lab.server.service.create_app includes. A route gets what it needs through FastAPI's dependencies
(dependencies: the Server, its store, settings and catalog, the token's user by role; sessions:
the signed-in browser and its checked forms), never from the app's construction.

  students     the API of a person's own work: whoami, uploads, one's submissions, their
               reports and feedback, the leaderboards
  instructors  the API's regrade, marks, queue and gradebook
  workers      /api/worker/*: claims, leases, results (lab work)
  pages        the browser's pages, sign-in and forms
  dependencies, sessions, html: what the routes share
"""
