// The machine check against a fake /proc and /sys tree: what is read, the busy rule, the warnings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "condbench/machine_state.h"

namespace condbench {
namespace {

namespace fs = std::filesystem;

class FakeRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("condbench-sysroot-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }
  // A machine with `cpus` CPUs, the load averages and `running` runnable tasks (ours included).
  void machine(int cpus, const std::string& loadavg, int running) {
    write("sys/devices/system/cpu/online", cpus == 1 ? "0\n" : "0-" + std::to_string(cpus - 1) + "\n");
    write("proc/loadavg", loadavg + " " + std::to_string(running) + "/321 4567\n");
    write("proc/stat", "cpu  1 2 3 4\nctxt 99\nprocs_running " + std::to_string(running) + "\nprocs_blocked 0\n");
  }
  MachineState read() { return read_machine_state(root_.string(), 3, 0); }
  fs::path root_;
};

TEST_F(FakeRoot, QuietMachineWithPerformanceGovernorHasNothingToSay) {
  machine(4, "0.30 0.20 0.10", 1);  // only us
  for (int cpu = 0; cpu < 4; ++cpu)
    write("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor", "performance\n");
  write("sys/devices/system/cpu/cpufreq/boost", "0\n");
  const MachineState s = read();
  EXPECT_EQ(s.cpus, 4);
  ASSERT_TRUE(s.load1 && s.load5 && s.load15 && s.running);
  EXPECT_DOUBLE_EQ(*s.load1, 0.30);
  EXPECT_DOUBLE_EQ(*s.load15, 0.10);
  EXPECT_DOUBLE_EQ(*s.running, 0.0);  // ourselves are not other work
  EXPECT_EQ(s.governor, "performance");
  ASSERT_TRUE(s.boost);
  EXPECT_FALSE(*s.boost);
  EXPECT_TRUE(machine_warnings(s, 4).empty());
}

TEST_F(FakeRoot, AReferenceRunWaitsForTheLastMinutesLoadToFallBelowHalfTheCpus) {
  machine(2, "1.00 0.40 0.20", 1);  // nothing running now, but a compile's minute still in the average
  MachineState s = read();
  EXPECT_FALSE(machine_busy(*other_load(s), s.cpus));  // the run queue is quiet
  EXPECT_FALSE(machine_settled(s));                    // the load average is at the line, not below it
  machine(2, "0.99 0.40 0.20", 1);
  EXPECT_TRUE(machine_settled(read()));
  machine(2, "0.10 0.10 0.10", 3);  // two others running: busy whatever the average says
  EXPECT_FALSE(machine_settled(read()));
  machine(2, "0.10 0.10 0.10", 1);
  s = read();
  s.load1.reset();  // a machine without /proc/loadavg is judged by its run queue alone
  EXPECT_TRUE(machine_settled(s));
}

TEST_F(FakeRoot, TwoBusyLoopsOnTwoCpusMakeTheMachineBusy) {
  machine(2, "6.20 5.10 4.00", 3);  // two hogs and us
  const MachineState s = read();
  EXPECT_EQ(s.cpus, 2);
  EXPECT_DOUBLE_EQ(*s.running, 2.0);
  EXPECT_DOUBLE_EQ(*other_load(s), 2.0);
  EXPECT_TRUE(machine_busy(*other_load(s), s.cpus));
  const std::vector<std::string> w = machine_warnings(s, 2);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0],
            "the machine is busy (2.0 other tasks running on 2 CPUs): timings will be noisy; wait for a quiet "
            "machine (--require-quiet refuses to start)");
  EXPECT_TRUE(s.governor.empty());  // no cpufreq in this tree: nothing said about it
  EXPECT_FALSE(s.boost);
}

TEST_F(FakeRoot, OneHogLeavesTooFewCpusForTwoThreads) {
  machine(2, "1.00 1.00 1.00", 2);
  const MachineState s = read();
  EXPECT_FALSE(machine_busy(*other_load(s), s.cpus));  // half the CPUs: not above the line
  const std::vector<std::string> w = machine_warnings(s, 2);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0],
            "2 threads but only 1.0 CPUs free (1.0 other tasks running on 2 CPUs): use --threads or wait for "
            "a quiet machine");
  EXPECT_TRUE(machine_warnings(s, 1).empty());
}

TEST_F(FakeRoot, GovernorAndBoostAreReportedWhereSysShowsThem) {
  machine(2, "0.10 0.10 0.10", 1);
  write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n");
  write("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n");
  write("sys/devices/system/cpu/intel_pstate/no_turbo", "0\n");
  const MachineState s = read();
  EXPECT_EQ(s.governor, "mixed: performance powersave");
  ASSERT_TRUE(s.boost);
  EXPECT_TRUE(*s.boost);
  EXPECT_EQ(machine_warnings(s, 1),
            (std::vector<std::string>{
                "CPU frequency governor is 'mixed: performance powersave', not 'performance': the clock may change "
                "during the run",
                "CPU boost (turbo) is on: the clock follows temperature and load, so runs drift"}));
}

TEST_F(FakeRoot, WithoutARunQueueTheLoadAverageIsJudged) {
  write("sys/devices/system/cpu/online", "0-1,4-5\n");
  write("proc/loadavg", "3.50 2.00 1.00 1/100 42\n");
  const MachineState s = read();
  EXPECT_EQ(s.cpus, 4);
  EXPECT_FALSE(s.running);
  EXPECT_DOUBLE_EQ(*other_load(s), 3.5);
  EXPECT_TRUE(machine_busy(3.5, 4));
  EXPECT_FALSE(machine_busy(2.0, 4));
}

TEST(MachineRule, BusyAboveHalfTheCpusAndThreadsAgainstFreeCpus) {
  EXPECT_FALSE(machine_busy(1.0, 2));
  EXPECT_TRUE(machine_busy(1.01, 2));
  EXPECT_FALSE(machine_busy(100, 0));  // unknown CPU count: no verdict
  EXPECT_FALSE(threads_exceed_free_cpus(0.55, 2, 2));
  EXPECT_TRUE(threads_exceed_free_cpus(1.0, 2, 2));
  EXPECT_FALSE(threads_exceed_free_cpus(30, 64, 8));
}

}  // namespace
}  // namespace condbench
