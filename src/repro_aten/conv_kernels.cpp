// The CNN operators of pot-repro/1 (docs/PROTOCOL.md 14.6): 2-D
// convolution through im2col and the fixed-order matrix product, batch
// normalization, max pooling. Each computes the arithmetic's definition on
// a thread inside a Scope and calls ATen's own kernel otherwise; a case the
// arithmetic does not define (groups, transposed or non-2-D convolution,
// another dtype) is noted as a violation and run by ATen.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUFunctions.h>
#include <ATen/Parallel.h>
#include <ATen/ops/convolution_backward_native.h>
#include <ATen/ops/convolution_native.h>
#include <fmt/format.h>

#include "repro/arith.h"
#include "repro_aten/gate.h"
#include "repro_aten/kernel_util.h"

namespace pot::repro_aten {

namespace {

using repro::FpEnvironment;
using ConvList = ArgOf<at::_ops::convolution::schema, 3>::type;
using ConvInt = ArgOf<at::_ops::convolution::schema, 8>::type;
using ConvBias = ArgOf<at::_ops::convolution_backward::schema, 3>::type;

int64_t pick(at::IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

// A 2-D convolution's shape: input [n, c, h, w], weight [o, c, kh, kw],
// output [n, o, oh, ow].
struct Conv2d {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
  int64_t taps() const { return c * kh * kw; }
  int64_t positions() const { return oh * ow; }
};

// The geometry when pot-repro/1 defines the case (4-D, groups 1, not
// transposed); nullopt (a violation noted) otherwise.
std::optional<Conv2d> conv2d(const char *op, const at::Tensor &input, const at::Tensor &weight, at::IntArrayRef stride,
                             at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, int64_t groups) {
  if (input.dim() != 4 || weight.dim() != 4 || transposed || groups != 1 || stride.empty() || padding.empty() ||
      dilation.empty() || stride.size() > 2 || padding.size() > 2 || dilation.size() > 2) {
    note_violation(fmt::format("{} of a {}-D input, groups {}{} has no pot-repro/1 kernel (the arithmetic defines "
                               "2-D convolutions of one group)",
                               op, input.dim(), groups, transposed ? ", transposed" : ""));
    return std::nullopt;
  }
  Conv2d g{input.size(0), input.size(1), input.size(2), input.size(3), weight.size(0), weight.size(2),
           weight.size(3), pick(stride, 0), pick(stride, 1), pick(padding, 0), pick(padding, 1), pick(dilation, 0),
           pick(dilation, 1), 0, 0};
  TORCH_CHECK(weight.size(1) == g.c, "convolution: weight of ", weight.size(1), " input channels for an input of ",
              g.c);
  TORCH_CHECK(g.sh > 0 && g.sw > 0 && g.dh > 0 && g.dw > 0 && g.ph >= 0 && g.pw >= 0,
              "convolution: stride and dilation must be positive, padding non-negative");
  g.oh = (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  TORCH_CHECK(g.oh > 0 && g.ow > 0, "convolution: the kernel does not fit the padded input");
  return g;
}

// cols [taps, n * positions]: column (s, y, x) holds sample s's window at
// (y, x), row (c, i, j) its tap; +0 where the window is in the padding.
at::Tensor im2col(const at::Tensor &x, const Conv2d &g) {
  at::Tensor cols = at::empty({g.taps(), g.n * g.positions()}, x.options());
  const float *px = x.data_ptr<float>();
  float *pc = cols.data_ptr<float>();
  const int64_t width = g.n * g.positions();
  at::parallel_for(0, g.taps(), grain_for(width), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t c = t / (g.kh * g.kw), i = t / g.kw % g.kh, j = t % g.kw;
      float *row = pc + t * width;
      for (int64_t s = 0; s < g.n; ++s)
        for (int64_t y = 0; y < g.oh; ++y)
          for (int64_t xo = 0; xo < g.ow; ++xo) {
            const int64_t iy = y * g.sh - g.ph + i * g.dh, ix = xo * g.sw - g.pw + j * g.dw;
            const bool in = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
            row[(s * g.oh + y) * g.ow + xo] = in ? px[((s * g.c + c) * g.h + iy) * g.w + ix] : 0.0f;
          }
    }
  });
  return cols;
}

at::Tensor conv_forward(const at::Tensor &input, const at::Tensor &weight, const c10::optional<at::Tensor> &bias,
                        const Conv2d &g) {
  const at::Tensor x = input.contiguous();
  // [o, n * positions]: each output the chain over the taps (c, i, j).
  at::Tensor p = product(weight.reshape({g.o, g.taps()}), im2col(x, g));
  at::Tensor out = p.view({g.o, g.n, g.oh, g.ow}).permute({1, 0, 2, 3}).contiguous();
  if (bias.has_value() && bias->defined()) {
    const at::Tensor b = bias->contiguous();
    TORCH_CHECK(b.numel() == g.o, "convolution: bias of ", b.numel(), " elements for ", g.o, " output channels");
    const float *pb = b.data_ptr<float>();
    float *po = out.data_ptr<float>();
    FpEnvironment env;
    for (int64_t s = 0; s < g.n; ++s)
      for (int64_t o = 0; o < g.o; ++o) {
        float *plane = po + (s * g.o + o) * g.positions();
        for (int64_t k = 0; k < g.positions(); ++k) plane[k] = plane[k] + pb[o];
      }
  }
  return out;
}

at::Tensor convolution_fn(const at::Tensor &input, const at::Tensor &weight, const c10::optional<at::Tensor> &bias,
                          ConvList stride, ConvList padding, ConvList dilation, bool transposed,
                          ConvList output_padding, ConvInt groups) {
  auto native = [&] {
    return at::native::convolution(input, weight, bias, int_list(stride), int_list(padding), int_list(dilation),
                                   transposed, int_list(output_padding), as_int(groups));
  };
  at::ScalarType t = c10::promoteTypes(input.scalar_type(), weight.scalar_type());
  if (bias.has_value() && bias->defined()) t = c10::promoteTypes(t, bias->scalar_type());
  if (!use_repro("aten::convolution.default", t)) return native();
  const auto g = conv2d("aten::convolution.default", input, weight, int_list(stride), int_list(padding),
                        int_list(dilation), transposed, as_int(groups));
  if (!g) return native();
  return conv_forward(input, weight, bias, *g);
}

// The gradients (PROTOCOL 14.6): with G the output gradient as [o, n *
// positions] and C the im2col columns, grad_bias[o] the sum order over
// G's row, grad_weight = G @ C^T (chains over (n, y, x)), and the input's
// gradient from D = W^T @ G (chains over o) scattered back: each input
// element adds, in the order (c, i, j, n, y, x), every column entry that
// read it, from +0.
std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_fn(
    const at::Tensor &grad_output, const at::Tensor &input, const at::Tensor &weight, ConvBias bias_sizes,
    ConvList stride, ConvList padding, ConvList dilation, bool transposed, ConvList output_padding, ConvInt groups,
    std::array<bool, 3> mask) {
  auto native = [&] {
    return at::native::convolution_backward(grad_output, input, weight, opt_int_list(bias_sizes), int_list(stride),
                                            int_list(padding), int_list(dilation), transposed,
                                            int_list(output_padding), as_int(groups), mask);
  };
  const at::ScalarType t = c10::promoteTypes(c10::promoteTypes(grad_output.scalar_type(), input.scalar_type()),
                                             weight.scalar_type());
  if (!use_repro("aten::convolution_backward.default", t)) return native();
  const auto g = conv2d("aten::convolution_backward.default", input, weight, int_list(stride), int_list(padding),
                        int_list(dilation), transposed, as_int(groups));
  if (!g) return native();
  const int64_t width = g->n * g->positions();
  const at::Tensor gm = grad_output.permute({1, 0, 2, 3}).contiguous().view({g->o, width});
  at::Tensor grad_input, grad_weight, grad_bias;
  if (mask[2]) {
    grad_bias = at::empty({g->o}, gm.options());
    const float *pg = gm.data_ptr<float>();
    float *pb = grad_bias.data_ptr<float>();
    FpEnvironment env;
    for (int64_t o = 0; o < g->o; ++o) pb[o] = repro::lane_sum(pg + o * width, width);
  }
  if (mask[1]) {
    const at::Tensor cols = im2col(input.contiguous(), *g);
    grad_weight = product(gm, cols.t()).view(weight.sizes());
  }
  if (mask[0]) {
    const at::Tensor d = product(weight.reshape({g->o, g->taps()}).t(), gm);  // [taps, width]
    grad_input = at::zeros(input.sizes(), gm.options());
    const float *pd = d.data_ptr<float>();
    float *pi = grad_input.data_ptr<float>();
    at::parallel_for(0, g->n * g->c, grain_for(g->kh * g->kw * g->positions()), [&](int64_t p0, int64_t p1) {
      FpEnvironment env;
      for (int64_t plane = p0; plane < p1; ++plane) {
        const int64_t s = plane / g->c, c = plane % g->c;
        float *dst = pi + plane * g->h * g->w;
        for (int64_t i = 0; i < g->kh; ++i)
          for (int64_t j = 0; j < g->kw; ++j) {
            const float *row = pd + ((c * g->kh + i) * g->kw + j) * width + s * g->positions();
            for (int64_t y = 0; y < g->oh; ++y)
              for (int64_t xo = 0; xo < g->ow; ++xo) {
                const int64_t iy = y * g->sh - g->ph + i * g->dh, ix = xo * g->sw - g->pw + j * g->dw;
                if (iy >= 0 && iy < g->h && ix >= 0 && ix < g->w) dst[iy * g->w + ix] += row[y * g->ow + xo];
              }
          }
      }
    });
  }
  return {grad_input, grad_weight, grad_bias};
}

// ---------------------------------------------------------------- batch normalization

// Channel c's values (dim 1) in row-major order as row c of [c, count].
at::Tensor by_channel(const at::Tensor &x) {
  std::vector<int64_t> perm{1, 0};
  for (int64_t d = 2; d < x.dim(); ++d) perm.push_back(d);
  return x.permute(perm).contiguous().view({x.size(1), -1});
}
at::Tensor from_channels(const at::Tensor &rows, const at::Tensor &like) {
  std::vector<int64_t> shape{like.size(1), like.size(0)}, perm{1, 0};
  for (int64_t d = 2; d < like.dim(); ++d) {
    shape.push_back(like.size(d));
    perm.push_back(d);
  }
  return rows.view(shape).permute(perm).contiguous();
}
const float *maybe(const c10::optional<at::Tensor> &t, at::Tensor &keep, int64_t n, const char *what) {
  if (!t.has_value() || !t->defined()) return nullptr;
  TORCH_CHECK(t->numel() == n, "batch_norm: ", what, " of ", t->numel(), " elements for ", n, " channels");
  keep = t->contiguous();
  return keep.data_ptr<float>();
}
bool batch_norm_repro(const char *op, const at::Tensor &input, std::initializer_list<const c10::optional<at::Tensor> *> ts) {
  at::ScalarType t = input.scalar_type();
  for (const auto *o : ts)
    if (o->has_value() && (*o)->defined()) t = c10::promoteTypes(t, (*o)->scalar_type());
  if (!use_repro(op, t)) return false;
  if (input.dim() < 2) {
    note_violation(fmt::format("{} of a {}-D input has no pot-repro/1 kernel", op, input.dim()));
    return false;
  }
  return true;
}

// Per channel over its count values: training, mean = sum / count, var =
// sum((x - mean)^2) / count, invstd = 1 / sqrt(var + eps), the running
// statistics updated in place as (m * mean) + ((1 - m) * running) and (m *
// (sum((x - mean)^2) / (count - 1))) + ((1 - m) * running); evaluation,
// mean and invstd from the running statistics; out = ((x - mean) * invstd)
// * w + b.
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_fn(
    const at::Tensor &input, const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias,
    const c10::optional<at::Tensor> &running_mean, const c10::optional<at::Tensor> &running_var, bool training,
    double momentum, double eps) {
  if (!batch_norm_repro("aten::native_batch_norm.default", input, {&weight, &bias, &running_mean, &running_var}))
    return at::cpu::native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps);
  const int64_t ch = input.size(1);
  const at::Tensor x = by_channel(input);
  const int64_t count = x.size(1);
  TORCH_CHECK(!training || count > 1, "Expected more than 1 value per channel when training, got input size ",
              input.sizes());
  at::Tensor wk, bk, mk, vk;
  const float *w = maybe(weight, wk, ch, "weight"), *b = maybe(bias, bk, ch, "bias");
  const float *rm = maybe(running_mean, mk, ch, "running_mean"), *rv = maybe(running_var, vk, ch, "running_var");
  TORCH_CHECK(training || (rm && rv), "batch_norm: evaluation needs running_mean and running_var");
  at::Tensor out = at::empty_like(x), mean = at::empty({ch}, x.options()), invstd = at::empty({ch}, x.options());
  std::vector<float> unbiased(static_cast<size_t>(ch));
  const float *px = x.data_ptr<float>();
  float *po = out.data_ptr<float>(), *pm = mean.data_ptr<float>(), *pi = invstd.data_ptr<float>();
  const float e = static_cast<float>(eps), cnt = static_cast<float>(count);
  at::parallel_for(0, ch, grain_for(count), [&](int64_t c0, int64_t c1) {
    FpEnvironment env;
    for (int64_t c = c0; c < c1; ++c) {
      const float *row = px + c * count;
      float mu, r;
      if (training) {
        mu = repro::lane_sum(row, count) / cnt;
        repro::LaneSum sq;
        for (int64_t k = 0; k < count; ++k) {
          const float dlt = row[k] - mu;
          sq.add(dlt * dlt);
        }
        const float ss = sq.total();
        r = 1.0f / std::sqrt(ss / cnt + e);
        unbiased[static_cast<size_t>(c)] = ss / (cnt - 1.0f);
      } else {
        mu = rm[c];
        r = 1.0f / std::sqrt(rv[c] + e);
      }
      pm[c] = mu;
      pi[c] = r;
      float *dst = po + c * count;
      for (int64_t k = 0; k < count; ++k) {
        float v = (row[k] - mu) * r;
        if (w) v = v * w[c];
        if (b) v = v + b[c];
        dst[k] = v;
      }
    }
  });
  if (training && rm && rv) {
    FpEnvironment env;
    const float m = static_cast<float>(momentum), keep = 1.0f - m;
    at::Tensor new_mean = at::empty({ch}, x.options()), new_var = at::empty({ch}, x.options());
    float *nm = new_mean.data_ptr<float>(), *nv = new_var.data_ptr<float>();
    for (int64_t c = 0; c < ch; ++c) {
      nm[c] = (m * pm[c]) + (keep * rm[c]);
      nv[c] = (m * unbiased[static_cast<size_t>(c)]) + (keep * rv[c]);
    }
    running_mean->copy_(new_mean.view(running_mean->sizes()));
    running_var->copy_(new_var.view(running_var->sizes()));
  }
  if (!training) return {from_channels(out, input), at::empty({0}, x.options()), at::empty({0}, x.options())};
  return {from_channels(out, input), mean, invstd};
}

// Its backward, per channel with xh = (x - mean) * invstd, A = sum(g), B =
// sum(g * xh): training, dx = (w * invstd) * ((g - A / count) - xh * (B /
// count)); evaluation (running statistics), dx = g * (w * invstd); dw = B,
// db = A.
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_fn(
    const at::Tensor &grad_out, const at::Tensor &input, const c10::optional<at::Tensor> &weight,
    const c10::optional<at::Tensor> &running_mean, const c10::optional<at::Tensor> &running_var,
    const c10::optional<at::Tensor> &save_mean, const c10::optional<at::Tensor> &save_invstd, bool train, double eps,
    std::array<bool, 3> mask) {
  if (!batch_norm_repro("aten::native_batch_norm_backward.default", input,
                        {&weight, &running_mean, &running_var, &save_mean, &save_invstd}))
    return at::cpu::native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                                               save_invstd, train, eps, mask);
  const int64_t ch = input.size(1);
  const at::Tensor x = by_channel(input), g = by_channel(grad_out);
  const int64_t count = x.size(1);
  at::Tensor wk, mk, ik, rmk, rvk;
  const float *w = maybe(weight, wk, ch, "weight");
  const float *sm = maybe(save_mean, mk, ch, "save_mean"), *si = maybe(save_invstd, ik, ch, "save_invstd");
  const float *rm = maybe(running_mean, rmk, ch, "running_mean"), *rv = maybe(running_var, rvk, ch, "running_var");
  TORCH_CHECK(train ? (sm && si) : (rm && rv), "batch_norm_backward: the statistics the forward used are missing");
  at::Tensor dx = at::empty_like(x), dw = at::empty({ch}, x.options()), db = at::empty({ch}, x.options());
  const float *px = x.data_ptr<float>(), *pg = g.data_ptr<float>();
  float *pdx = dx.data_ptr<float>(), *pdw = dw.data_ptr<float>(), *pdb = db.data_ptr<float>();
  const float e = static_cast<float>(eps), cnt = static_cast<float>(count);
  at::parallel_for(0, ch, grain_for(count), [&](int64_t c0, int64_t c1) {
    FpEnvironment env;
    for (int64_t c = c0; c < c1; ++c) {
      const float mu = train ? sm[c] : rm[c], r = train ? si[c] : 1.0f / std::sqrt(rv[c] + e);
      const float *xr = px + c * count, *gr = pg + c * count;
      repro::LaneSum a, bsum;
      for (int64_t k = 0; k < count; ++k) {
        a.add(gr[k]);
        bsum.add(gr[k] * ((xr[k] - mu) * r));
      }
      const float sa = a.total(), sb = bsum.total();
      pdw[c] = sb;
      pdb[c] = sa;
      const float scale = w ? w[c] * r : r;
      float *dst = pdx + c * count;
      for (int64_t k = 0; k < count; ++k) {
        if (train) {
          const float xh = (xr[k] - mu) * r;
          dst[k] = scale * ((gr[k] - sa / cnt) - xh * (sb / cnt));
        } else {
          dst[k] = gr[k] * scale;
        }
      }
    }
  });
  return {mask[0] ? from_channels(dx, input) : at::Tensor(), mask[1] && w ? dw.view(weight->sizes()) : at::Tensor(),
          mask[2] ? db : at::Tensor()};
}

// ---------------------------------------------------------------- max pooling

struct Pool2d {
  int64_t planes, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};
int64_t pooled(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  int64_t out = (in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0)) / s + 1;
  if (ceil && (out - 1) * s >= in + p) --out;
  return out;
}
std::optional<Pool2d> pool2d(const char *op, const at::Tensor &x, at::IntArrayRef kernel, at::IntArrayRef stride,
                             at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  if ((x.dim() != 3 && x.dim() != 4) || kernel.empty() || kernel.size() > 2 || stride.size() > 2 ||
      padding.empty() || padding.size() > 2 || dilation.empty() || dilation.size() > 2) {
    note_violation(fmt::format("{} of a {}-D input has no pot-repro/1 kernel", op, x.dim()));
    return std::nullopt;
  }
  at::IntArrayRef st = stride.empty() ? kernel : stride;
  Pool2d p{x.numel() / (x.size(-1) * x.size(-2)), x.size(-2), x.size(-1), pick(kernel, 0), pick(kernel, 1),
           pick(st, 0), pick(st, 1), pick(padding, 0), pick(padding, 1), pick(dilation, 0), pick(dilation, 1), 0, 0};
  TORCH_CHECK(p.kh > 0 && p.kw > 0 && p.sh > 0 && p.sw > 0 && p.dh > 0 && p.dw > 0, "max_pool2d: kernel, stride "
              "and dilation must be positive");
  TORCH_CHECK(p.ph <= p.kh / 2 && p.pw <= p.kw / 2, "max_pool2d: pad should be at most half of the kernel size");
  p.oh = pooled(p.h, p.kh, p.sh, p.ph, p.dh, ceil_mode);
  p.ow = pooled(p.w, p.kw, p.sw, p.pw, p.dw, ceil_mode);
  TORCH_CHECK(p.oh > 0 && p.ow > 0, "max_pool2d: the output would be empty");
  return p;
}
std::vector<int64_t> pooled_shape(const at::Tensor &x, const Pool2d &p) {
  std::vector<int64_t> s(x.sizes().begin(), x.sizes().end() - 2);
  s.push_back(p.oh);
  s.push_back(p.ow);
  return s;
}

// Each output is the window's largest value in row-major window order: a
// value replaces the one held when it is greater or NaN; the index is its
// h * w + x in the plane, the window's first in-bounds position when none
// replaced -inf. No arithmetic: the value is one of the inputs.
std::tuple<at::Tensor, at::Tensor> max_pool_fn(const at::Tensor &self, at::IntArrayRef kernel,
                                               at::IntArrayRef stride, at::IntArrayRef padding,
                                               at::IntArrayRef dilation, bool ceil_mode) {
  auto native = [&] { return at::cpu::max_pool2d_with_indices(self, kernel, stride, padding, dilation, ceil_mode); };
  if (!use_repro("aten::max_pool2d_with_indices.default", self.scalar_type())) return native();
  const auto p = pool2d("aten::max_pool2d_with_indices.default", self, kernel, stride, padding, dilation, ceil_mode);
  if (!p) return native();
  const at::Tensor x = self.contiguous();
  at::Tensor out = at::empty(pooled_shape(x, *p), x.options());
  at::Tensor idx = at::empty(pooled_shape(x, *p), x.options().dtype(at::kLong));
  const float *px = x.data_ptr<float>();
  float *po = out.data_ptr<float>();
  int64_t *pi = idx.data_ptr<int64_t>();
  at::parallel_for(0, p->planes, grain_for(p->oh * p->ow * p->kh * p->kw), [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q)
      for (int64_t y = 0; y < p->oh; ++y)
        for (int64_t xo = 0; xo < p->ow; ++xo) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t at_ = -1;
          for (int64_t i = 0; i < p->kh; ++i)
            for (int64_t j = 0; j < p->kw; ++j) {
              const int64_t iy = y * p->sh - p->ph + i * p->dh, ix = xo * p->sw - p->pw + j * p->dw;
              if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) continue;
              const float v = px[(q * p->h + iy) * p->w + ix];
              if (at_ < 0) at_ = iy * p->w + ix;
              if (v > best || std::isnan(v)) {
                best = v;
                at_ = iy * p->w + ix;
              }
            }
          po[(q * p->oh + y) * p->ow + xo] = best;
          pi[(q * p->oh + y) * p->ow + xo] = at_;
        }
  });
  return {out, idx};
}

// The input's gradient: +0, then each output's gradient added to its
// index's element, outputs in row-major order.
at::Tensor max_pool_backward_fn(const at::Tensor &grad, const at::Tensor &self, at::IntArrayRef kernel,
                                at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                                bool ceil_mode, const at::Tensor &indices) {
  auto native = [&] {
    return at::cpu::max_pool2d_with_indices_backward(grad, self, kernel, stride, padding, dilation, ceil_mode,
                                                     indices);
  };
  if (!use_repro("aten::max_pool2d_with_indices_backward.default",
                 c10::promoteTypes(grad.scalar_type(), self.scalar_type())))
    return native();
  const auto p = pool2d("aten::max_pool2d_with_indices_backward.default", self, kernel, stride, padding, dilation,
                        ceil_mode);
  if (!p) return native();
  const at::Tensor g = grad.contiguous(), ix = indices.contiguous();
  TORCH_CHECK(g.numel() == p->planes * p->oh * p->ow && ix.numel() == g.numel(),
              "max_pool2d_backward: the gradient and indices do not have the output's shape");
  at::Tensor gi = at::zeros(self.sizes(), g.options());
  const float *pg = g.data_ptr<float>();
  const int64_t *pix = ix.data_ptr<int64_t>();
  float *pgi = gi.data_ptr<float>();
  const int64_t plane_in = p->h * p->w, plane_out = p->oh * p->ow;
  at::parallel_for(0, p->planes, grain_for(p->h * p->w), [&](int64_t q0, int64_t q1) {
    FpEnvironment env;
    for (int64_t q = q0; q < q1; ++q)
      for (int64_t k = 0; k < plane_out; ++k) {
        const int64_t at_ = pix[q * plane_out + k];
        TORCH_CHECK(at_ >= 0 && at_ < plane_in, "max_pool2d_backward: index ", at_, " is outside the plane");
        pgi[q * plane_in + at_] += pg[q * plane_out + k];
      }
  });
  return gi;
}

}  // namespace

void register_conv_kernels(Registrar &reg) {
  POT_REPRO_KERNEL(reg, convolution, "convolution", convolution_fn);
  POT_REPRO_KERNEL(reg, convolution_backward, "convolution_backward", convolution_backward_fn);
  POT_REPRO_KERNEL(reg, native_batch_norm, "native_batch_norm", batch_norm_fn);
  POT_REPRO_KERNEL(reg, native_batch_norm_backward, "native_batch_norm_backward", batch_norm_backward_fn);
  POT_REPRO_KERNEL(reg, max_pool2d_with_indices, "max_pool2d_with_indices", max_pool_fn);
  POT_REPRO_KERNEL(reg, max_pool2d_with_indices_backward, "max_pool2d_with_indices_backward", max_pool_backward_fn);
}

}  // namespace pot::repro_aten
