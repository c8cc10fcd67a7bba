// condbench-report's floors (report/floors.cpp's primitive_floors): the read rate of the right
// buffer, memory, compute and calls, from a run's primitives.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include "analysis.h"
#include "result_file.h"

namespace condbench::report {
namespace {

Series primitive(const std::string& name, double us, std::map<std::string, double> counters) {
  Series s;
  s.name = "primitive/cpu/" + name;
  s.primitive = true;
  s.device = "cpu";
  s.primitive_name = name;
  s.times_us = {us * 1.01, us, us * 0.99};
  s.counters = std::move(counters);
  return s;
}

// One core that reads 1 MiB at 100 bytes/µs and 64 MiB at 10, and multiplies-adds at 1000 FLOPs/µs.
ResultFile machine() {
  ResultFile f;
  f.series = {primitive("read_bandwidth_64MiB", 67108864.0 / 10, {{"bytes", 67108864}}),
              primitive("read_bandwidth_1MiB", 1048576.0 / 100, {{"bytes", 1048576}}),
              primitive("fma_peak", 2.0, {{"flops", 2000}}), primitive("torch_op", 0.5, {})};
  return f;
}

TEST(Floors, TheRateOfTheLargestBufferNoLargerThanTheBytes) {
  const auto limits = cpu_limits({machine()});
  ASSERT_EQ(limits.size(), 1u);
  const CpuLimits& l = limits.begin()->second;
  ASSERT_EQ(l.read.size(), 2u);
  EXPECT_EQ(l.read[0].primitive, "read_bandwidth_1MiB");  // sorted by size, not by name or order
  EXPECT_DOUBLE_EQ(*l.read_rate(1000), 100);              // below every buffer: the smallest one's rate
  EXPECT_DOUBLE_EQ(*l.read_rate(1048576), 100);
  EXPECT_DOUBLE_EQ(*l.read_rate(67108863), 100);  // just under 64 MiB: the 1 MiB buffer's rate
  EXPECT_DOUBLE_EQ(*l.read_rate(67108864), 10);
  EXPECT_DOUBLE_EQ(*l.read_rate(1e12), 10);
  EXPECT_DOUBLE_EQ(*l.flops_per_us, 1000);
  EXPECT_DOUBLE_EQ(*l.torch_op_us, 0.5);
}

TEST(Floors, TheClosestBufferBelowNotAFasterSmallerOne) {
  // Past the last-level cache the rate halves: a 25 MiB step is read at the 24 MiB buffer's rate,
  // not at the 8 MiB one's, which would make its floor half what the machine can do.
  ResultFile f;
  f.series = {primitive("read_bandwidth_8MiB", 8388608.0 / 80, {{"bytes", 8388608}}),
              primitive("read_bandwidth_16MiB", 16777216.0 / 55, {{"bytes", 16777216}}),
              primitive("read_bandwidth_24MiB", 25165824.0 / 40, {{"bytes", 25165824}}),
              primitive("read_bandwidth_32MiB", 33554432.0 / 33, {{"bytes", 33554432}})};
  const CpuLimits l = cpu_limits({f}).begin()->second;
  EXPECT_DOUBLE_EQ(*l.read_rate(8.7e6), 80);
  EXPECT_DOUBLE_EQ(*l.read_rate(26.3e6), 40);
  EXPECT_DOUBLE_EQ(*l.read_rate(33554432), 33);
  EXPECT_DOUBLE_EQ(*l.read_rate(1e9), 33);
  EXPECT_FALSE(l.flops_per_us);  // not measured: no compute floor, so no floor at all
}

TEST(Floors, TwoFilesOfOneMachineGiveOneRatePerBufferWhateverTheirOrder) {
  ResultFile slow, fast;
  slow.series = {primitive("read_bandwidth_1MiB", 1048576.0 / 50, {{"bytes", 1048576}})};
  fast.series = {primitive("read_bandwidth_1MiB", 1048576.0 / 80, {{"bytes", 1048576}})};
  for (const auto& files : {std::vector<ResultFile>{slow, fast}, std::vector<ResultFile>{fast, slow}}) {
    const CpuLimits l = cpu_limits(files).begin()->second;
    ASSERT_EQ(l.read.size(), 1u);
    EXPECT_DOUBLE_EQ(*l.read_rate(2e6), 80);  // the faster: a floor stays a floor
  }
}

TEST(Floors, MemoryComputeAndCalls) {
  const CpuLimits l = cpu_limits({machine()}).begin()->second;
  Cell c;
  c.counters = {{"bytes_read", 5000}, {"flops_executed", 20000}, {"launches", 10}};
  // memory 5000 / 100 = 50 µs, compute 20000 / 1000 = 20 µs: memory-bound, 50 µs
  auto f = floor_of(l, c, "native");
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->us, 50);
  EXPECT_STREQ(f->bound(), "memory");
  // the torch engine pays each operator call on top: 10 x 0.5 µs
  f = floor_of(l, c, "torch");
  EXPECT_DOUBLE_EQ(f->us, 55);
  // and so does the aoti engine: its launches are the ATen calls of its package; Python's are not counted
  EXPECT_DOUBLE_EQ(floor_of(l, c, "aoti")->us, 55);
  EXPECT_DOUBLE_EQ(floor_of(l, c, "python")->us, 50);
  c.counters["flops_executed"] = 200000;  // 200 µs of multiply-adds
  EXPECT_STREQ(floor_of(l, c, "native")->bound(), "compute");
  EXPECT_DOUBLE_EQ(floor_of(l, c, "native")->us, 200);
  // a strategy that does not know what it reads has no floor
  c.counters.erase("bytes_read");
  EXPECT_FALSE(floor_of(l, c, "native"));
  // nor does a run without the primitives
  EXPECT_TRUE(cpu_limits({}).empty());
  // nor a cell whose counters make no time (another machine's file can say anything)
  c.counters = {{"bytes_read", 0}, {"flops_executed", 0}};
  EXPECT_FALSE(floor_of(l, c, "native"));
  c.counters = {{"bytes_read", -5000}, {"flops_executed", -20000}, {"launches", -10}};
  EXPECT_FALSE(floor_of(l, c, "torch"));
}

TEST(Floors, AGpuCellsHostFloorIsWhatItIssuedAtThePrimitivesCost) {
  // The H200's: a bare launch 4.84 µs, a read back and its wait 8.04; torch_op as a run measures it
  const std::map<std::string, double> primitives{{"launch", 4.84}, {"read4_pinned_sync", 8.04}, {"torch_op", 14.0}};
  Cell c = make_cell({60, 61, 62});
  c.counters = {{"launches", 12}, {"host_syncs", 0}};
  EXPECT_NEAR(*host_floor_us(primitives, c, "native"), 12 * 4.84, 1e-9);
  EXPECT_NEAR(*host_floor_us(primitives, c, "torch"), 12 * 14.0, 1e-9);
  c.counters["host_syncs"] = 2.25;
  EXPECT_NEAR(*host_floor_us(primitives, c, "torch"), 12 * 14.0 + 2.25 * 8.04, 1e-9);
  // nothing to say without the primitive, for the peer's Python, or without launches counted
  EXPECT_FALSE(host_floor_us({{"launch", 4.84}}, c, "torch"));
  EXPECT_FALSE(host_floor_us(primitives, c, "python"));
  c.counters.erase("launches");
  EXPECT_FALSE(host_floor_us(primitives, c, "native"));
}

}  // namespace
}  // namespace condbench::report
