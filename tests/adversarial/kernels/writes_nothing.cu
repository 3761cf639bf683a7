// verdict: correct failed never written
// An empty body: the grader fills `out` with NaN before every launch, so nothing can pass by
// leaving memory as it was (a zeroed buffer, or a previous run's results).
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
}
