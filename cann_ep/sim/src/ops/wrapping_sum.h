// The accumulator of the simulated sums (ReduceSum / ReduceMean / ReduceProd, Cumsum): integers
// wrap as CANN's do, without C++'s undefined signed overflow.
#pragma once

#include <type_traits>

namespace aclsim {

// The type a sum of C values accumulates in: the unsigned type of an integer C (it wraps), else C.
template <typename C, bool = std::is_integral<C>::value>
struct WrappingAccumulator {
  using type = C;
};
template <typename C>
struct WrappingAccumulator<C, true> {
  using type = std::make_unsigned_t<C>;
};

template <typename C>
using WrappingAccumulatorOf = typename WrappingAccumulator<C>::type;

}  // namespace aclsim
