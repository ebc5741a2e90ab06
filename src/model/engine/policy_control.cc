// PolicyControl (see policy_control.h).
#include "model/engine/policy_control.h"

#include <utility>

#include "core/error.h"
#include "core/sysinfo.h"
#include "moe/calibration.h"
#include "moe/moe_tune.h"

namespace moex::model::engine {

PolicyControl::PolicyControl(moe::MoePolicy policy,
                             std::optional<moe::CalibratedCap> host_calibration)
    : policy_(std::move(policy)),
      host_calibration_(std::move(host_calibration)),
      user_settings_(policy_.settings) {}

moe::MoePolicy PolicyControl::policy_for(const moe::MoeBackend& experts) const {
  moe::MoePolicy p = policy_;
  if (p.backend == &experts) return p;
  p.backend = &experts;
  p.calibration = host_calibration_;
  return p;
}

void PolicyControl::attach(Layers layers, bool measure_requested, bool expert_parallel,
                           const moe::MeasureTime& time) {
  layers_ = std::move(layers);
  // Measure when nothing trustworthy decides (moe::plan_online_measurement). CPU only: there
  // the two paths give the same bits, so measuring changes no output.
  plan_ = moe::plan_online_measurement(
      {policy_.settings, policy_.calibration, policy_.backend->kind(), measure_requested,
       expert_parallel, !layers_.ffn.empty()},
      moex_commit());
  if (plan_.measure) measure_ = std::make_unique<moe::OnlineMeasurement>(time);
}

void PolicyControl::set_user_settings(const moe::FusedSettings& settings) {
  user_settings_ = settings;
  if (settings.mode != moe::FusedMode::kAuto || settings.max_dff) measure_.reset();
  apply(settings);
}

void PolicyControl::apply(const moe::FusedSettings& s) {
  policy_.settings = s;
  for (MoeFfn* m : layers_.ffn) m->set_policy(policy_for(m->backend()));
}

// While recording, every MoE layer runs the step's path (mode on/off from the measurement).
void PolicyControl::begin_step(int64_t n) {
  if (!measure_ || n != 1) return;
  moe::FusedSettings s = user_settings_;
  if (measure_->recording()) {
    s.mode = measure_->path_for_step() == moe::Path::kFused ? moe::FusedMode::kOn
                                                             : moe::FusedMode::kOff;
    s.mode_source = moe::SettingSource::kMeasurement;
  }
  if (s.mode != policy_.settings.mode || s.mode_source != policy_.settings.mode_source) apply(s);
}

void PolicyControl::end_step(int64_t n) {
  if (measure_ && n == 1 && measure_->end_step()) finish();
}

void PolicyControl::record(int64_t layer, double seconds) {
  measure_->record(layers_.shapes[size_t(layer)], seconds);
}

bool PolicyControl::conclude() {
  if (!measure_ || !measure_->conclude()) return false;
  finish();
  return true;
}

void PolicyControl::finish() {
  const moe::Backend kind = policy_.backend->kind();
  const moe::HostCap cap = measure_->host_cap(kind);
  report_ = measure_->report();
  const std::string date = utc_date_time();
  policy_.calibration = moe::CalibratedCap{
      cap.cap, str_cat("measured on this host at ", date, ", ", cap.text), moex_commit(), true};
  std::string saved;
  const std::string path = moe::default_calibration_path();
  const moe::CalibrationKey key = policy_.backend->calibration_key();
  moe::TuneHost host{key.backend, key.hardware, key.threads, key.isa, key.precision,
                     moex_commit(), date};
  try {
    if (path.empty()) fail("neither MOEX_CALIBRATION, XDG_CACHE_HOME nor HOME is set");
    moe::save_tune_entry(path, moe::make_tune_entry(host, cap, moe::calibration_points(measure_->points())));
    saved = "saved to " + path;
  } catch (const Error& e) {
    saved = str_cat("not saved (", e.what(), ")");
  }
  report_.push_back(str_cat("cap ", cap.cap, " for ", key.hardware, ", ", key.threads,
                            " threads, ", key.isa, ", ", key.precision, " precision; ", saved));
  measure_.reset();
  apply(user_settings_);
}

}  // namespace moex::model::engine
