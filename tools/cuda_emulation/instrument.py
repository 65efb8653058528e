#!/usr/bin/env python3
"""Patches a THROWAWAY checkout (never commit the result) for the CPU reproduction of the GPU fp16
path (README.md): ops::linear rounds its input to fp16 when REXNLU_DEBUG_ROUND_LINEAR=1, and the CPU
attention is recomputed with attention_mma_port.h when REXNLU_EMU=f32|f16|bf16 (the worst difference
per call and the windows per chunk go to stderr; REXNLU_EMU_REPLACE=1 makes the port's output the
op's output). Usage: tools/cuda_emulation/instrument.py CHECKOUT"""
import os
import sys

root = sys.argv[1]
port = os.path.abspath(os.path.join(os.path.dirname(__file__), "attention_mma_port.h"))

p = os.path.join(root, "src/ops/attention.cpp")
s = open(p).read()
s = s.replace("namespace rexnlu::ops {\n", f'''#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "{port}"
namespace rexnlu::ops {{
static long g_win[10];
static struct WinPrint {{ ~WinPrint() {{ if (std::getenv("REXNLU_EMU")) {{ std::fprintf(stderr, "EMU windows per chunk:");
  for (int i = 0; i < 10; ++i) std::fprintf(stderr, " %d:%ld", i, g_win[i]); std::fprintf(stderr, "\\n"); }} }} }} g_winprint;
''', 1)
old = "      backends::cpu::disentangled_attention(c);\n      return;"
assert old in s
s = s.replace(old, '''      backends::cpu::disentangled_attention(c);
      if (const char* em = std::getenv("REXNLU_EMU")) {
        const int mode = std::strcmp(em, "f16") == 0 ? 1 : std::strcmp(em, "bf16") == 0 ? 2 : 0;
        std::vector<float> eo(size_t(c.length) * c.ld_out);
        emu::mma_attention(c.length, c.num_heads, c.head_dim, c.q, c.k, c.v, c.ld_qkv, c.q_rel, c.k_rel, c.ld_rel,
                           c.rel_rows, c.position_ids, c.mask, c.scale, eo.data(), c.ld_out, mode, g_win);
        double worst = 0;
        const int W = c.num_heads * c.head_dim;
        for (int r = 0; r < c.length; ++r)
          for (int col = 0; col < W; ++col) {
            const double w = c.out[size_t(r) * c.ld_out + col], g = eo[size_t(r) * c.ld_out + col];
            worst = std::max(worst, std::abs(g - w) / std::max(1.0, std::abs(w)));
          }
        static double gworst = 0;
        if (worst > gworst) gworst = worst, std::fprintf(stderr, "EMU L=%d worst so far %.4g\\n", c.length, worst);
        if (std::getenv("REXNLU_EMU_REPLACE"))
          for (int r = 0; r < c.length; ++r)
            for (int col = 0; col < W; ++col) c.out[size_t(r) * c.ld_out + col] = eo[size_t(r) * c.ld_out + col];
      }
      return;''')
open(p, "w").write(s)

p = os.path.join(root, "src/ops/linear.cpp")
s = open(p).read()
s = s.replace("namespace rexnlu::ops {\n", "#include <cstdlib>\n#include <vector>\nnamespace rexnlu::ops {\n", 1)
old = "      backends::cpu::linear(x.f32(), rows, in, W.f32(), bias, out, y.f32(), to_int(y.ld()));\n      return;"
assert old in s
s = s.replace(old, '''      if (std::getenv("REXNLU_DEBUG_ROUND_LINEAR")) {
        std::vector<float> xr(size_t(rows) * in);
        for (size_t i = 0; i < xr.size(); ++i) xr[i] = static_cast<float>(static_cast<_Float16>(x.f32()[i]));
        backends::cpu::linear(xr.data(), rows, in, W.f32(), bias, out, y.f32(), to_int(y.ld()));
        return;
      }
      backends::cpu::linear(x.f32(), rows, in, W.f32(), bias, out, y.f32(), to_int(y.ld()));
      return;''')
open(p, "w").write(s)
print("instrumented", root)
