// The execution providers the library's kernels register for (common/declared_op.h registers
// every op; an op's `providers` in ort_ops/ops/<op>.py says which of them it has).
#pragma once

namespace ortops {

constexpr const char* kCpuProvider = "CPUExecutionProvider";
constexpr const char* kCannProvider = "CANNExecutionProvider";

}  // namespace ortops
