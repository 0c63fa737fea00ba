// Stand-alone check of byocc_attention.cuh against a float64 host reference (no torch needed):
//   nvcc -std=c++17 -O3 -arch=sm_90a -Ibyocc/backends/cuda/csrc bench/gpu/attn_kernel_check.cu -o /tmp/ac && /tmp/ac
// Each case: random inputs, output poisoned with NaN, max |err| / tolerance printed; exit 1 on a failure.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "byocc_attention.cuh"

using namespace byocc::attention;

struct Case {
  const char* name;
  int B, S, Skv, N, Nkv, H, Hv;
  int mask;
  int window;
  int bias;  // 0 none, 1 full (B,N,S,Skv), 2 (1,N,1,Skv), 3 (B,1,S,Skv)
  int stacked;
  float scale;  // 0: 1/sqrt(H)
};

template <typename T> T to_t(float x);
template <> __half to_t<__half>(float x) { return __float2half_rn(x); }
template <> __nv_bfloat16 to_t<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> float to_t<float>(float x) { return x; }
template <typename T> double from_t(T x) { return (double)Num<T>::load(x); }

template <typename T, int kD>
bool run(const Case& c, double tol) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int B = c.B, S = c.S, Skv = c.Skv, N = c.N, Nkv = c.Nkv, H = c.H, Hv = c.Hv;
  // storage: stacked -> one (B,S,N*H+N*H+N*Hv) tensor (requires Nkv == N, S == Skv)
  size_t nq = (size_t)B * S * N * H, nk = (size_t)B * Skv * Nkv * H, nv = (size_t)B * Skv * Nkv * Hv;
  size_t nall = nq + nk + nv;
  std::vector<T> hbuf(nall);
  for (auto& x : hbuf) x = to_t<T>(nd(rng));
  int64_t nb = c.bias == 0 ? 0 : c.bias == 1 ? (int64_t)B * N * S * Skv : c.bias == 2 ? (int64_t)N * Skv : (int64_t)B * S * Skv;
  std::vector<T> hbias(nb > 0 ? nb : 1);
  for (auto& x : hbias) x = to_t<T>(nd(rng));
  Params p{};
  p.batch = B; p.seq_q = S; p.seq_kv = Skv; p.heads = N; p.kv_heads = Nkv; p.head_dim = H; p.head_dim_v = Hv;
  int64_t qo = 0, ko, vo;
  if (c.stacked) {
    int64_t D = (int64_t)N * (2 * H + Hv);
    p.q_stride[0] = S * D; p.q_stride[1] = D; p.q_stride[2] = H;
    p.k_stride[0] = S * D; p.k_stride[1] = D; p.k_stride[2] = H;
    p.v_stride[0] = S * D; p.v_stride[1] = D; p.v_stride[2] = Hv;
    ko = (int64_t)N * H; vo = 2 * (int64_t)N * H;
  } else {
    p.q_stride[0] = (int64_t)S * N * H; p.q_stride[1] = (int64_t)N * H; p.q_stride[2] = H;
    p.k_stride[0] = (int64_t)Skv * Nkv * H; p.k_stride[1] = (int64_t)Nkv * H; p.k_stride[2] = H;
    p.v_stride[0] = (int64_t)Skv * Nkv * Hv; p.v_stride[1] = (int64_t)Nkv * Hv; p.v_stride[2] = Hv;
    ko = nq; vo = nq + nk;
  }
  p.out_stride[0] = (int64_t)S * N * Hv; p.out_stride[1] = (int64_t)N * Hv; p.out_stride[2] = Hv;
  if (c.bias == 1) { p.bias_stride[0] = (int64_t)N * S * Skv; p.bias_stride[1] = (int64_t)S * Skv; p.bias_stride[2] = Skv; p.bias_stride[3] = 1; }
  if (c.bias == 2) { p.bias_stride[0] = 0; p.bias_stride[1] = Skv; p.bias_stride[2] = 0; p.bias_stride[3] = 1; }
  if (c.bias == 3) { p.bias_stride[0] = (int64_t)S * Skv; p.bias_stride[1] = 0; p.bias_stride[2] = Skv; p.bias_stride[3] = 1; }
  p.scale = c.scale != 0.f ? c.scale : 1.f / std::sqrt((float)H);
  p.mask = c.mask; p.window = c.window;
  T *dbuf, *dbias, *dout;
  size_t nout = (size_t)B * S * N * Hv;
  cudaMalloc(&dbuf, nall * sizeof(T)); cudaMalloc(&dbias, hbias.size() * sizeof(T)); cudaMalloc(&dout, nout * sizeof(T));
  cudaMemcpy(dbuf, hbuf.data(), nall * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(dbias, hbias.data(), hbias.size() * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemset(dout, 0xff, nout * sizeof(T));  // NaN poison
  p.q = dbuf + qo; p.k = dbuf + ko; p.v = dbuf + vo; p.bias = c.bias ? dbias : nullptr; p.out = dout;
  int rc = launch<T, kD>(p, 0);
  cudaError_t e2 = cudaDeviceSynchronize();
  std::vector<T> hout(nout);
  cudaMemcpy(hout.data(), dout, nout * sizeof(T), cudaMemcpyDeviceToHost);
  cudaFree(dbuf); cudaFree(dbias); cudaFree(dout);
  if (rc != 0 || e2 != cudaSuccess) { printf("%-28s launch error %d %s\n", c.name, rc, cudaGetErrorString(e2)); return false; }
  auto at = [&](int64_t off, int64_t b, int64_t s, int64_t n, int64_t d, const int64_t* st) {
    return from_t(hbuf[off + b * st[0] + s * st[1] + n * st[2] + d]); };
  double maxerr = 0; int bad = 0; int nan_expected = 0;
  int64_t offset = c.mask == kBottomRight ? Skv - S : 0;
  std::vector<double> sc(Skv);
  for (int b = 0; b < B; ++b) for (int n = 0; n < N; ++n) for (int i = 0; i < S; ++i) {
    int nk2 = n / (N / Nkv);
    double mx = -INFINITY;
    for (int j = 0; j < Skv; ++j) {
      double s = 0; for (int d = 0; d < H; ++d) s += at(qo, b, i, n, d, p.q_stride) * at(ko, b, j, nk2, d, p.k_stride);
      s *= (double)p.scale;
      if (c.bias) s += from_t(hbias[b * p.bias_stride[0] + n * p.bias_stride[1] + i * p.bias_stride[2] + j * p.bias_stride[3]]);
      bool keep = true;
      if (c.mask) { keep = j <= i + offset; if (c.window > 0) keep = keep && j > i + offset - c.window; }
      sc[j] = keep ? s : -INFINITY; if (sc[j] > mx) mx = sc[j];
    }
    double sum = 0; for (int j = 0; j < Skv; ++j) { sc[j] = std::exp(sc[j] - mx); sum += sc[j]; }
    for (int d = 0; d < Hv; ++d) {
      double o = 0; for (int j = 0; j < Skv; ++j) o += sc[j] * at(vo, b, j, nk2, d, p.v_stride);
      o /= sum;
      double got = from_t(hout[(size_t)b * p.out_stride[0] + i * p.out_stride[1] + n * p.out_stride[2] + d]);
      if (std::isnan(o)) { ++nan_expected; if (!std::isnan(got)) ++bad; continue; }
      double err = std::fabs(got - o);
      if (!(err <= tol + tol * std::fabs(o))) ++bad;
      if (err > maxerr || std::isnan(err)) maxerr = err;
    }
  }
  printf("%-28s kD=%3d max|err| %.3g  nan-rows-elems %d  %s\n", c.name, kD, maxerr, nan_expected, bad ? "FAIL" : "ok");
  return bad == 0;
}

int main() {
  bool ok = true;
  //                 name            B  S   Skv N Nkv H   Hv  mask win bias st scale
  Case cs[] = {
    {"plain_f16_h64",               2, 77, 77, 4, 4, 64, 64, 0, 0, 0, 0, 0.f},
    {"topleft_h32",                 2, 50, 70, 3, 3, 32, 32, 1, 0, 0, 0, 0.f},
    {"bottomright_h40",             1, 45, 100, 2, 2, 40, 40, 2, 0, 0, 0, 0.f},
    {"bottomright_Skv<S_nan",       1, 70, 40, 2, 2, 64, 64, 2, 0, 0, 0, 0.f},
    {"window_h128",                 1, 130, 150, 2, 2, 128, 128, 2, 17, 0, 0, 0.f},
    {"bias_full_negscale",          2, 33, 65, 2, 2, 64, 64, 0, 0, 1, 0, -0.5f},
    {"bias_1N1K_tinyscale",         2, 33, 65, 4, 4, 64, 48, 0, 0, 2, 0, 1e-8f},
    {"bias_B1SK_causal",            2, 40, 40, 4, 4, 64, 64, 1, 0, 3, 0, 0.f},
    {"gqa_8_2_h128",                2, 64, 96, 8, 2, 128, 128, 0, 0, 0, 0, 0.f},
    {"stacked_h64",                 2, 48, 48, 4, 4, 64, 64, 0, 0, 0, 1, 0.f},
    {"stacked_causal_h80",          1, 48, 48, 3, 3, 80, 80, 1, 0, 0, 1, 0.f},
    {"h256",                        1, 70, 70, 2, 2, 256, 256, 1, 0, 1, 0, 0.f},
  };
  for (const Case& c : cs) {
    int need = c.H > c.Hv ? c.H : c.Hv;
    #define DISPATCH(T, TOL) \
      if (need <= 32) ok &= run<T, 32>(c, TOL); else if (need <= 64) ok &= run<T, 64>(c, TOL); \
      else if (need <= 128) ok &= run<T, 128>(c, TOL); else ok &= run<T, 256>(c, TOL);
    printf("f16  "); DISPATCH(__half, 1e-2)
    printf("bf16 "); DISPATCH(__nv_bfloat16, 2e-2)
    printf("f32  "); DISPATCH(float, 1e-5)
  }
  printf(ok ? "ALL OK\n" : "SOME FAILED\n");
  return ok ? 0 : 1;
}
