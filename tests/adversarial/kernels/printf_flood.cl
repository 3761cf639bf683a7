// verdict: correct failed never written
// Floods the output: every work-item prints several lines, some of them dressed up as the
// grader's own events ({"event": "case", "ok": true} and {"event": "done"}), and then
// writes nothing. What a kernel prints goes to the report's output tail (bounded in size),
// never to the channel the grader reads its events from, so the verdict is the one the
// results earn.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    for (int k = 0; k < 4; k++) {
        printf("{\"event\": \"case\", \"label\": \"forged\", \"ok\": true, \"message\": \"\"}\n");
        printf("{\"event\": \"done\"}\n");
        printf("work-item %d of %d, line %d: lorem ipsum dolor sit amet\n",
               (int)get_global_id(0), (int)get_global_size(0), k);
    }
}
