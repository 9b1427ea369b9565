// Byte-shuffle and unshuffle of tensor payloads (see codec.hpp), vectorised
// with Highway and dispatched at run time to the best target the CPU has.
// Element sizes 2 and 4 (f16/bf16, f32) use interleaved vector loads/stores;
// other sizes use a blocked scalar loop.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lib/trace/shuffle.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace peat::impl::trace::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out stream b holds byte b of each of the n elements.
void Shuffle2(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t n) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::Vec<decltype(d)> b0, b1;
    hn::LoadInterleaved2(d, in + 2 * i, b0, b1);
    hn::StoreU(b0, d, out + i);
    hn::StoreU(b1, d, out + n + i);
  }
  for (; i < n; ++i) {
    out[i] = in[2 * i];
    out[n + i] = in[2 * i + 1];
  }
}

void Shuffle4(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t n) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::Vec<decltype(d)> b0, b1, b2, b3;
    hn::LoadInterleaved4(d, in + 4 * i, b0, b1, b2, b3);
    hn::StoreU(b0, d, out + i);
    hn::StoreU(b1, d, out + n + i);
    hn::StoreU(b2, d, out + 2 * n + i);
    hn::StoreU(b3, d, out + 3 * n + i);
  }
  for (; i < n; ++i)
    for (size_t b = 0; b < 4; ++b) out[b * n + i] = in[4 * i + b];
}

void Unshuffle2(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t n) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreInterleaved2(hn::LoadU(d, in + i), hn::LoadU(d, in + n + i), d, out + 2 * i);
  for (; i < n; ++i) {
    out[2 * i] = in[i];
    out[2 * i + 1] = in[n + i];
  }
}

void Unshuffle4(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t n) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreInterleaved4(hn::LoadU(d, in + i), hn::LoadU(d, in + n + i), hn::LoadU(d, in + 2 * n + i),
                          hn::LoadU(d, in + 3 * n + i), d, out + 4 * i);
  for (; i < n; ++i)
    for (size_t b = 0; b < 4; ++b) out[4 * i + b] = in[b * n + i];
}

}  // namespace peat::impl::trace::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "lib/trace/codec.hpp"

namespace peat::impl::trace {

HWY_EXPORT(Shuffle2);
HWY_EXPORT(Shuffle4);
HWY_EXPORT(Unshuffle2);
HWY_EXPORT(Unshuffle4);

namespace {

// Blocked so that each output stream is written in cache-sized runs.
void shuffle_generic(const std::byte* in, std::byte* out, std::size_t n, std::size_t e) noexcept {
  constexpr std::size_t kBlock = 1024;
  for (std::size_t start = 0; start < n; start += kBlock) {
    const std::size_t end = start + kBlock < n ? start + kBlock : n;
    for (std::size_t b = 0; b < e; ++b)
      for (std::size_t i = start; i < end; ++i) out[b * n + i] = in[i * e + b];
  }
}

void unshuffle_generic(const std::byte* in, std::byte* out, std::size_t n, std::size_t e) noexcept {
  constexpr std::size_t kBlock = 1024;
  for (std::size_t start = 0; start < n; start += kBlock) {
    const std::size_t end = start + kBlock < n ? start + kBlock : n;
    for (std::size_t b = 0; b < e; ++b)
      for (std::size_t i = start; i < end; ++i) out[i * e + b] = in[b * n + i];
  }
}

}  // namespace

void shuffle_bytes(const std::byte* in, std::byte* out, std::size_t bytes, std::size_t elem_size) noexcept {
  if (elem_size <= 1) {
    if (bytes) std::memcpy(out, in, bytes);
    return;
  }
  const std::size_t n = bytes / elem_size;
  const auto* i8 = reinterpret_cast<const uint8_t*>(in);
  auto* o8 = reinterpret_cast<uint8_t*>(out);
  if (elem_size == 2) HWY_DYNAMIC_DISPATCH(Shuffle2)(i8, o8, n);
  else if (elem_size == 4) HWY_DYNAMIC_DISPATCH(Shuffle4)(i8, o8, n);
  else shuffle_generic(in, out, n, elem_size);
  const std::size_t done = n * elem_size;
  if (bytes > done) std::memcpy(out + done, in + done, bytes - done);
}

void unshuffle_bytes(const std::byte* in, std::byte* out, std::size_t bytes, std::size_t elem_size) noexcept {
  if (elem_size <= 1) {
    if (bytes) std::memcpy(out, in, bytes);
    return;
  }
  const std::size_t n = bytes / elem_size;
  const auto* i8 = reinterpret_cast<const uint8_t*>(in);
  auto* o8 = reinterpret_cast<uint8_t*>(out);
  if (elem_size == 2) HWY_DYNAMIC_DISPATCH(Unshuffle2)(i8, o8, n);
  else if (elem_size == 4) HWY_DYNAMIC_DISPATCH(Unshuffle4)(i8, o8, n);
  else unshuffle_generic(in, out, n, elem_size);
  const std::size_t done = n * elem_size;
  if (bytes > done) std::memcpy(out + done, in + done, bytes - done);
}

}  // namespace peat::impl::trace
#endif  // HWY_ONCE
