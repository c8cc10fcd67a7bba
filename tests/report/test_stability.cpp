// condbench-report's stability checks (report/stability.cpp): work-independent strategies must
// take the same time everywhere, and a run's recorded load makes it disturbed.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "analysis.h"
#include "report_test_support.h"
#include "result_file.h"
#include "stability.h"

namespace condbench::report {
namespace {

using test_support::group_of;
using test_support::one_series;

TEST(Stability, WorkIndependentStrategiesMustTakeTheSameTimeEverywhere) {
  // masked does the same FLOPs in every scenario; fused does not (its time may follow the exits).
  Group g = group_of({{{"torch/masked", "exit:1"}, {2600, 2610, 2590, 2605, 2595}},
                      {{"torch/masked", "mix:late"}, {74000, 73000, 75000, 74500, 73500}},
                      {{"native/fused", "exit:1"}, {1, 1.01, 0.99, 1, 1}},
                      {{"native/fused", "mix:late"}, {50, 51, 49, 50, 50}}});
  for (const char* scenario : {"exit:1", "mix:late"})
    g.cells[{"torch/masked", scenario}].counters["flops_executed"] = 25600;
  g.cells[{"native/fused", "exit:1"}].counters["flops_executed"] = 9000;
  g.cells[{"native/fused", "mix:late"}].counters["flops_executed"] = 24000;
  std::vector<std::string> evidence = flat_work_evidence({g});
  ASSERT_EQ(evidence.size(), 1u);
  EXPECT_EQ(evidence[0].rfind("torch/masked does the same work in every scenario (25600 FLOPs per inference) but "
                              "took 2600–74000 µs (median, exit:1 vs mix:late, intervals 2590–2610 µs and "
                              "73000–75000 µs) on cuda · X, batch 1, hidden 64, 3 blocks",
                              0),
            0u)
      << evidence[0];

  // Within noise: 4 % apart is within the tolerance; nothing to report.
  g.cells[{"torch/masked", "mix:late"}] = make_cell({2700, 2710, 2690, 2705, 2695});
  g.cells[{"torch/masked", "mix:late"}].counters["flops_executed"] = 25600;
  EXPECT_TRUE(flat_work_evidence({g}).empty());
}

ResultFile with_context(const std::map<std::string, std::string>& context) {
  ResultFile f = one_series({1, 2, 3});
  f.path = "results/run.json";
  f.context = context;
  return f;
}

TEST(Stability, TheRecordedLoadMakesARunDisturbed) {
  // Older files: Google Benchmark's load average against its CPU count (busy above half the CPUs).
  EXPECT_EQ(busy_machine_evidence(with_context({{"load_avg", "[6.2,5.1,4]"}, {"num_cpus", "2"}})),
            (std::vector<std::string>{"run.json: load average 6.20 on 2 CPUs when the run started (busy above 1.0)"}));
  EXPECT_TRUE(busy_machine_evidence(with_context({{"load_avg", "[0.55,1.01,1.29]"}, {"num_cpus", "2"}})).empty());
  EXPECT_TRUE(busy_machine_evidence(with_context({})).empty());  // the Python peer records none
  // Newer files carry the runner's own verdicts, which win over the lagging load average.
  EXPECT_TRUE(busy_machine_evidence(with_context({{"load_avg", "[6.2,5.1,4]"},
                                                  {"num_cpus", "2"},
                                                  {"condbench_machine_busy", "no"},
                                                  {"condbench_machine_busy_end", "no"}}))
                  .empty());
  const std::vector<std::string> end = busy_machine_evidence(with_context({{"condbench_machine_busy", "no"},
                                                                           {"condbench_machine_busy_end", "yes"},
                                                                           {"condbench_running_end", "2.0"},
                                                                           {"condbench_loadavg_end", "4.10 2.00 1.00"},
                                                                           {"condbench_cpus", "2"}}));
  EXPECT_EQ(end, (std::vector<std::string>{"run.json: busy when the run ended (2.0 other tasks running, load average "
                                           "4.10 2.00 1.00 on 2 CPUs)"}));

  const RunCheck check = check_run({with_context({{"load_avg", "[6.2,5.1,4]"}, {"num_cpus", "2"}}),
                                    with_context({{"condbench_test_slowdown", "cpu/native/fused:1.2"}})},
                                   {});
  EXPECT_TRUE(check.disturbed());
  EXPECT_EQ(check.evidence.size(), 1u);
  ASSERT_EQ(check.notes.size(), 1u);
  EXPECT_NE(check.notes[0].find("CONDBENCH_TEST_SLOWDOWN=cpu/native/fused:1.2"), std::string::npos);
  EXPECT_FALSE(check_run({with_context({})}, {}).disturbed());
}

}  // namespace
}  // namespace condbench::report
