// verdict: compiles failed its macros expand to more than
// A compiler bomb: each macro doubles the one before, so the last one expands to 2^28
// terms. The compiler would run for hours and eat all the memory there is; the source
// check's own preprocessing stops at its token bound, before any compiler sees the file
// (and a compile that still runs long is stopped at the compile time limit).
#define A0(x) x + x
#define A1(x) A0(x) + A0(x)
#define A2(x) A1(x) + A1(x)
#define A3(x) A2(x) + A2(x)
#define A4(x) A3(x) + A3(x)
#define A5(x) A4(x) + A4(x)
#define A6(x) A5(x) + A5(x)
#define A7(x) A6(x) + A6(x)
#define A8(x) A7(x) + A7(x)
#define A9(x) A8(x) + A8(x)
#define A10(x) A9(x) + A9(x)
#define A11(x) A10(x) + A10(x)
#define A12(x) A11(x) + A11(x)
#define A13(x) A12(x) + A12(x)
#define A14(x) A13(x) + A13(x)
#define A15(x) A14(x) + A14(x)
#define A16(x) A15(x) + A15(x)
#define A17(x) A16(x) + A16(x)
#define A18(x) A17(x) + A17(x)
#define A19(x) A18(x) + A18(x)
#define A20(x) A19(x) + A19(x)
#define A21(x) A20(x) + A20(x)
#define A22(x) A21(x) + A21(x)
#define A23(x) A22(x) + A22(x)
#define A24(x) A23(x) + A23(x)
#define A25(x) A24(x) + A24(x)
#define A26(x) A25(x) + A25(x)
#define A27(x) A26(x) + A26(x)
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    float v = in[0];
    out[0] = A27(v);
}
