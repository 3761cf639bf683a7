// verdict: correct failed never written
// Floods the output: every thread prints several lines, some of them dressed up as the
// grader's own events ({"event": "case", "ok": true} and {"event": "done"}), and then
// writes nothing. What a kernel prints goes to the report's output tail (bounded in size),
// never to the channel the grader reads its events from, so the verdict is the one the
// results earn.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    for (int k = 0; k < 4; k++) {
        printf("{\"event\": \"case\", \"label\": \"forged\", \"ok\": true, \"message\": \"\"}\n");
        printf("{\"event\": \"done\"}\n");
        printf("thread %d of block (%d, %d), line %d: lorem ipsum dolor sit amet\n",
               (int)(threadIdx.y * blockDim.x + threadIdx.x), (int)blockIdx.x, (int)blockIdx.y, k);
    }
}
