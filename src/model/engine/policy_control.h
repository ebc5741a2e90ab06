// An engine's dispatch policy and its online measurement (moe/online_measure.h), out of the
// engine's step: the settings the user gave, the plan decided at open, the path every MoE
// layer runs while the measurement records, and its conclusion (the cap applied to every
// layer and saved to the calibration file).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/engine/moe_ffn.h"
#include "moe/dispatch_policy.h"
#include "moe/online_measure.h"

namespace moex::model::engine {

class PolicyControl {
 public:
  // policy: that of the experts' backend (policy.backend). host_calibration: the calibrated
  // cap of the CPU MoE backend, for the layers a placement keeps on the host when the experts'
  // backend is another (--n-cpu-moe, --experts-on auto).
  explicit PolicyControl(moe::MoePolicy policy,
                         std::optional<moe::CalibratedCap> host_calibration = std::nullopt);
  // What the experts' backend's layers are built with.
  const moe::MoePolicy& policy() const { return policy_; }
  // The policy of a layer whose experts run on `experts`: the same settings, that backend, and
  // the host calibration for the CPU backend beside another experts' backend.
  moe::MoePolicy policy_for(const moe::MoeBackend& experts) const;

  struct Layers {
    std::vector<MoeFfn*> ffn;                // every MoE layer (the others skipped)
    std::vector<moe::MeasureShape> shapes;   // per model layer (MoE layers only)
  };
  // Once the MoE layers exist: decides whether to measure (moe::plan_online_measurement).
  void attach(Layers layers, bool measure_requested, bool expert_parallel,
              const moe::MeasureTime& time);

  // New fused-path settings for every MoE layer; ends a measurement unless plain auto.
  void set_user_settings(const moe::FusedSettings& settings);
  // Around each step of n rows: single-token steps are what the measurement times.
  void begin_step(int64_t n);
  void end_step(int64_t n);
  // Whether this MoE call of n rows is timed, and its time when it is.
  bool timing(int64_t n) const { return measure_ && n == 1 && measure_->recording(); }
  void record(int64_t layer, double seconds);
  // Ends a measurement past its minimum window now; false, changing nothing, otherwise.
  bool conclude();

  bool measuring() const { return measure_ != nullptr; }
  const std::vector<std::string>& report() const { return report_; }
  const moe::MeasurePlan& plan() const { return plan_; }

 private:
  void apply(const moe::FusedSettings& s);  // to every MoE layer
  void finish();

  moe::MoePolicy policy_;
  std::optional<moe::CalibratedCap> host_calibration_;
  moe::FusedSettings user_settings_;  // what the options / set_user_settings say
  Layers layers_;
  std::unique_ptr<moe::OnlineMeasurement> measure_;  // while measuring
  std::vector<std::string> report_;
  moe::MeasurePlan plan_;
};

}  // namespace moex::model::engine
