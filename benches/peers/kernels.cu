// The kernels every benchmarked system launches: the Rust harness embeds this file with
// `include_str!`, the Python peers read it next to themselves. All are compiled with NVRTC on the
// GPU machine; W1-W7 launch theirs with a 1 x 1 x 1 grid of 1 x 1 x 1 blocks, so every system runs the
// same machine code and the numbers measure launch and scheduling overhead only.

// W1-W4, W6, W7: a kernel that does nothing.
extern "C" __global__ void empty() {}

// W5: one thread stores `value` into `*slot`; the last node of a chain leaves its value there,
// which shows that updated arguments reached the device.
extern "C" __global__ void stamp(unsigned int *slot, unsigned int value) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        *slot = value;
    }
}

// W6: busy-waits for `ns` nanoseconds of the global timer, so that the host can queue work
// behind it and the queued work then runs back to back.
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long start;
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

// W8: one loop iteration's bookkeeping: counts *left down and keeps *go set while it is non-zero.
extern "C" __global__ void countdown(unsigned int *left, unsigned int *go) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        unsigned int v = *left - 1u;
        *left = v;
        *go = v != 0u ? 1u : 0u;
    }
}

// W9: an elementwise op on a chunk of `n` floats, `iters` rounds of a multiply-add per element,
// so that its time is comparable to copying the chunk over PCIe (launched with 256-thread
// blocks covering `n`, unlike the 1 x 1 kernels above).
extern "C" __global__ void work(float *x, unsigned int n, unsigned int iters) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        for (unsigned int k = 0; k < iters; ++k) {
            v = v * 0.999f + 0.5f;
        }
        x[i] = v;
    }
}

// W11: the bias and activation of an MLP layer after its GEMM, in place on a row-major
// [rows x cols] result `y` of `n` floats: y[i] += b[i % cols], then max(y[i], 0) when `relu`
// is set (launched with 256-thread blocks covering `n`).
extern "C" __global__ void bias_act(float *y, const float *b, unsigned int n, unsigned int cols,
                                    unsigned int relu) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = y[i] + b[i % cols];
        y[i] = relu ? fmaxf(v, 0.0f) : v;
    }
}

// W14's decode-like step (a branch and the join of one layer of W12's diamond, on `n` floats,
// launched with 256-thread blocks covering them): a branch writes h = max(a * s + c, 0) from
// the state `s`; the join folds the four branches into the state, y = 0.5 y + 0.25 (h0 + h1 +
// h2 + h3).
extern "C" __global__ void decode_branch(float *h, const float *s, unsigned int n, float a,
                                         float c) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        h[i] = fmaxf(a * s[i] + c, 0.0f);
    }
}

extern "C" __global__ void decode_mix(float *y, const float *h0, const float *h1, const float *h2,
                                      const float *h3, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = 0.5f * y[i] + 0.25f * (((h0[i] + h1[i]) + h2[i]) + h3[i]);
    }
}
