"""A class for the similarity check: independent solutions of matmul_tiled written in different
styles (as students who did the work themselves would), and copies of three of them disguised
by renaming, reformatting, rewritten comments, reordered independent statements and a port
from CUDA to OpenCL. Each OpenCL kernel here is a correct matmul_tiled (`lab batch` on PoCL finds
them all correct); the CUDA ones are the same algorithms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

STAGE = "matmul_tiled"

# The lecture's own solution, comments dropped: what most students hand in.
LECTURE = """\
__kernel void matmul(__global float *P, __global const float *M, __global const float *N, int width)
{
    __local float Mds[TILE_WIDTH][TILE_WIDTH];
    __local float Nds[TILE_WIDTH][TILE_WIDTH];
    int bx = get_group_id(0), by = get_group_id(1);
    int tx = get_local_id(0), ty = get_local_id(1);
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;
    float Pvalue = 0.0f;
    for (int m = 0; m < width / TILE_WIDTH; ++m) {
        Mds[ty][tx] = M[Row * width + m * TILE_WIDTH + tx];
        Nds[ty][tx] = N[(m * TILE_WIDTH + ty) * width + Col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    P[Row * width + Col] = Pvalue;
}
"""

# Pointers walked along the row of M and the column of N, and an unrolled inner loop.
POINTERS_CU = """\
extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    __shared__ float As[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Bs[TILE_WIDTH][TILE_WIDTH];
    const int r = blockIdx.y * TILE_WIDTH + threadIdx.y;
    const int c = blockIdx.x * TILE_WIDTH + threadIdx.x;
    const float *a = M + r * width + threadIdx.x;           // walks right along row r
    const float *b = N + threadIdx.y * width + c;           // walks down column c
    float sum = 0.0f;
    for (int t = width / TILE_WIDTH; t > 0; --t) {
        As[threadIdx.y][threadIdx.x] = *a;
        Bs[threadIdx.y][threadIdx.x] = *b;
        a += TILE_WIDTH;
        b += TILE_WIDTH * width;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TILE_WIDTH; i++) sum += As[threadIdx.y][i] * Bs[i][threadIdx.x];
        __syncthreads();
    }
    P[r * width + c] = sum;
}
"""

# get_global_id for the element, mad() for the product, a while loop over the tiles.
GLOBAL_ID = """\
// tiled matmul
__kernel void matmul(__global float *P, __global const float *M, __global const float *N, int width)
{
    __local float left[TILE_WIDTH][TILE_WIDTH], right[TILE_WIDTH][TILE_WIDTH];
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    const int lc = get_local_id(0);
    const int lr = get_local_id(1);
    float acc = 0.0f;
    int tile = 0;
    while (tile * TILE_WIDTH < width) {
        left[lr][lc] = M[row * width + (tile * TILE_WIDTH + lc)];
        right[lr][lc] = N[(tile * TILE_WIDTH + lr) * width + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int q = 0; q < TILE_WIDTH; q++)
            acc = mad(left[lr][q], right[q][lc], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
        tile++;
    }
    P[row * width + col] = acc;
}
"""

# A naive-looking student: offsets kept in ints, and the column tile copied the other way round.
OFFSETS_CU = """\
extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    __shared__ float sM[TILE_WIDTH][TILE_WIDTH + 1];
    __shared__ float sN[TILE_WIDTH][TILE_WIDTH + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int rowOff = (blockIdx.y * blockDim.y + ty) * width;
    int col = blockIdx.x * blockDim.x + tx;
    float result = 0;
    int phases = width / TILE_WIDTH;
    for (int p = 0; p < phases; p++) {
        int kBase = p * TILE_WIDTH;
        sM[ty][tx] = M[rowOff + kBase + tx];
        sN[tx][ty] = N[(kBase + ty) * width + col];
        __syncthreads();
        for (int j = 0; j < TILE_WIDTH; j++) {
            result += sM[ty][j] * sN[tx][j];
        }
        __syncthreads();
    }
    P[rowOff + col] = result;
}
"""

# The CUDA SDK's matrixMul: begin/step/end indices of the tiles.
SDK_STEPS = """\
// matmul_tiled, in the style of the CUDA samples' matrixMul
__kernel void matmul(__global float *P, __global const float *M, __global const float *N, int width)
{
    __local float As[TILE_WIDTH][TILE_WIDTH];
    __local float Bs[TILE_WIDTH][TILE_WIDTH];
    int bx = get_group_id(0);
    int by = get_group_id(1);
    int tx = get_local_id(0);
    int ty = get_local_id(1);
    int aBegin = width * TILE_WIDTH * by;      // first tile of M this group reads
    int aEnd = aBegin + width - 1;            // last one
    int aStep = TILE_WIDTH;
    int bBegin = TILE_WIDTH * bx;             // first tile of N
    int bStep = TILE_WIDTH * width;
    float Csub = 0.0f;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        As[ty][tx] = M[a + width * ty + tx];
        Bs[ty][tx] = N[b + width * ty + tx];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE_WIDTH; ++k)
            Csub += As[ty][k] * Bs[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    int c = width * TILE_WIDTH * by + TILE_WIDTH * bx;
    P[c + width * ty + tx] = Csub;
}
"""

# The inner product unrolled by hand, four at a time, with a helper function.
UNROLLED = """\
float dot4(__local const float *a, __local const float *b, int stride)
{
    return a[0] * b[0] + a[1] * b[stride] + a[2] * b[2 * stride] + a[3] * b[3 * stride];
}

__kernel void matmul(__global float *P, __global const float *M, __global const float *N, int width)
{
    __local float tileM[TILE_WIDTH][TILE_WIDTH];
    __local float tileN[TILE_WIDTH][TILE_WIDTH];
    int x = get_local_id(0), y = get_local_id(1);
    int gRow = get_group_id(1) * TILE_WIDTH + y;
    int gCol = get_group_id(0) * TILE_WIDTH + x;
    float total = 0.0f;
    for (int ph = 0; ph < width; ph += TILE_WIDTH) {
        tileM[y][x] = M[gRow * width + ph + x];
        tileN[y][x] = N[(ph + y) * width + gCol];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TILE_WIDTH; kk += 4)
            total += dot4(&tileM[y][kk], &tileN[kk][x], TILE_WIDTH);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    P[gRow * width + gCol] = total;
}
"""

# Guards on every load (for widths that are not multiples of the tile) and fmaf.
GUARDED_CU = """\
extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    __shared__ float ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ float ns[TILE_WIDTH][TILE_WIDTH];
    unsigned int row = blockIdx.y * TILE_WIDTH + threadIdx.y;
    unsigned int col = blockIdx.x * TILE_WIDTH + threadIdx.x;
    float value = 0.0f;
    unsigned int tiles = (width + TILE_WIDTH - 1) / TILE_WIDTH;
    for (unsigned int s = 0; s < tiles; ++s) {
        unsigned int mc = s * TILE_WIDTH + threadIdx.x;
        unsigned int nr = s * TILE_WIDTH + threadIdx.y;
        ms[threadIdx.y][threadIdx.x] = (row < width && mc < width) ? M[row * width + mc] : 0.0f;
        ns[threadIdx.y][threadIdx.x] = (nr < width && col < width) ? N[nr * width + col] : 0.0f;
        __syncthreads();
        for (unsigned int e = 0; e < TILE_WIDTH; ++e)
            value = fmaf(ms[threadIdx.y][e], ns[e][threadIdx.x], value);
        __syncthreads();
    }
    if (row < width && col < width)
        P[row * width + col] = value;
}
"""

# Copies of UNROLLED, SDK_STEPS and GUARDED_CU, disguised.
UNROLLED_COPY = """\
/* helper: four products of a row of one tile with a column of the other */
float four(__local const float *p, __local const float *q, int s) {
  return p[0]*q[0] + p[1]*q[s] + p[2]*q[2*s] + p[3]*q[3*s];
}
__kernel void matmul(__global float *P, __global const float *M, __global const float *N, int width) {
  __local float sa[TILE_WIDTH][TILE_WIDTH];
  __local float sb[TILE_WIDTH][TILE_WIDTH];
  int i = get_local_id(0), j = get_local_id(1);
  int R = get_group_id(1)*TILE_WIDTH + j;
  int C = get_group_id(0)*TILE_WIDTH + i;
  float out = 0.0f;
  for (int base = 0; base < width; base += TILE_WIDTH) {
    sa[j][i] = M[R*width + base + i];   // my element of the M tile
    sb[j][i] = N[(base + j)*width + C]; // and of the N tile
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int u = 0; u < TILE_WIDTH; u += 4) out += four(&sa[j][u], &sb[u][i], TILE_WIDTH);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  P[R*width + C] = out;
}
"""

SDK_STEPS_COPY = """\
__kernel void matmul(__global float *P, __global const float *M, __global const float *N, int width)
{
    // tiles in local memory
    __local float Ms[TILE_WIDTH][TILE_WIDTH];
    __local float Ns[TILE_WIDTH][TILE_WIDTH];
    int ly = get_local_id(1);
    int lx = get_local_id(0);
    int gy = get_group_id(1);
    int gx = get_group_id(0);
    int nStart = TILE_WIDTH * gx;
    int nInc = TILE_WIDTH * width;
    int mStart = width * TILE_WIDTH * gy;
    int mInc = TILE_WIDTH;
    int mStop = mStart + width - 1;
    float sum = 0.0f;
    for (int mi = mStart, ni = nStart; mi <= mStop; mi += mInc, ni += nInc) {
        Ns[ly][lx] = N[ni + width * ly + lx];
        Ms[ly][lx] = M[mi + width * ly + lx];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int q = 0; q < TILE_WIDTH; ++q)
            sum += Ms[ly][q] * Ns[q][lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    int out = width * TILE_WIDTH * gy + TILE_WIDTH * gx;
    P[out + width * ly + lx] = sum;
}
"""

GUARDED_PORTED = """\
// OpenCL version
__kernel void matmul(__global float *P, __global const float *M, __global const float *N, int width)
{
    __local float tA[TILE_WIDTH][TILE_WIDTH];
    __local float tB[TILE_WIDTH][TILE_WIDTH];
    uint r = get_group_id(1) * TILE_WIDTH + get_local_id(1);
    uint c = get_group_id(0) * TILE_WIDTH + get_local_id(0);
    float v = 0.0f;
    uint n = (width + TILE_WIDTH - 1) / TILE_WIDTH;
    for (uint t = 0; t < n; ++t) {
        uint ac = t * TILE_WIDTH + get_local_id(0);
        uint br = t * TILE_WIDTH + get_local_id(1);
        tA[get_local_id(1)][get_local_id(0)] = (r < width && ac < width) ? M[r * width + ac] : 0.0f;
        tB[get_local_id(1)][get_local_id(0)] = (br < width && c < width) ? N[br * width + c] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint e = 0; e < TILE_WIDTH; ++e)
            v = fma(tA[get_local_id(1)][e], tB[e][get_local_id(0)], v);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (r < width && c < width)
        P[r * width + c] = v;
}
"""

# student -> (suffix, source). Names chosen so that they say nothing about who copied.
SUBMISSIONS: dict[str, tuple[str, str]] = {
    "ayla": (".cl", LECTURE),
    "bruno": (".cu", POINTERS_CU),
    "chidi": (".cl", GLOBAL_ID),
    "dana": (".cu", OFFSETS_CU),
    "emil": (".cl", SDK_STEPS),
    "fatima": (".cl", UNROLLED),
    "goran": (".cu", GUARDED_CU),
    "hana": (".cl", UNROLLED_COPY),
    "ivo": (".cl", SDK_STEPS_COPY),
    "jun": (".cl", GUARDED_PORTED),
}
COPIED = frozenset({frozenset({"fatima", "hana"}), frozenset({"emil", "ivo"}), frozenset({"goran", "jun"})})


@dataclass
class SimilarClass:
    root: Path
    copied: frozenset[frozenset[str]] = COPIED
    students: list[str] = field(default_factory=list)


def build(root: Path, extra: dict[str, tuple[str, str]] | None = None) -> SimilarClass:
    """Write the class under `root`: one folder per student holding matmul_tiled.cu or .cl."""
    room = SimilarClass(root)
    for student, (suffix, source) in {**SUBMISSIONS, **(extra or {})}.items():
        folder = root / student
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{STAGE}{suffix}").write_text(source, encoding="utf-8")
        room.students.append(student)
    return room


# Names a disguise leaves alone: the stage fixes the kernel's name and TILE_WIDTH, and keywords
# and built-ins cannot be renamed.
_FIXED = frozenset({"matmul", "TILE_WIDTH", "x", "y", "z"})


def disguise(source: str, rng) -> str:
    """What a student hiding a copy does: every name they chose renamed, comments replaced,
    indentation and spacing changed (rng: a random.Random)."""
    import re

    from lab.batch import fingerprint as fp

    keep = fp._KEYWORDS | fp._BUILTINS | set(fp._ALIASES) | set(fp._INDEX_MEMBERS) | set(fp._INDEX_CALLS) \
        | fp._BARRIERS | _FIXED | {"extern", "C", "pragma", "unroll"}
    names = sorted({n for n in re.findall(r"\b[A-Za-z_]\w*\b", re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S))
                    if n not in keep and not n.startswith("CLK_")})
    fresh = {n: f"{rng.choice('abcdefghijklmnopqrstuvw')}{rng.randrange(10**6)}" for n in names}
    out = re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S)
    out = re.sub(r"(?<![\w.])[A-Za-z_]\w*\b", lambda m: fresh.get(m.group(0), m.group(0)), out)
    lines = []
    for line in out.splitlines():
        body = line.strip()
        if not body:
            continue
        indent = " " * rng.choice((0, 2, 4, 8)) if not body.startswith("#") else ""
        if rng.random() < 0.2:
            lines.append(f"{indent}// note {rng.randrange(10**6)}")
        lines.append(indent + re.sub(r" ([=+*<]) ", lambda m: rng.choice(("{}", " {} ")).format(m.group(1)), body))
    return "\n".join(lines) + "\n"
