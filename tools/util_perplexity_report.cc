#include "tools/util_perplexity_report.h"

#include <cmath>
#include <cstdio>

namespace moex::tools {
namespace {

std::string fmt(const char* f, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

nlohmann::ordered_json percentiles_json(const eval::Percentiles& p) {
  return {{"max", p.max},   {"p99.9", p.p99_9}, {"p99", p.p99}, {"p95", p.p95},
          {"p90", p.p90},   {"median", p.median}, {"p10", p.p10}, {"p5", p.p5},
          {"p1", p.p1},     {"p0.1", p.p0_1},   {"min", p.min}};
}

void percentile_lines(std::string& out, const char* name, const eval::Percentiles& p,
                      double scale, const char* unit) {
  const std::pair<const char*, double> rows[] = {
      {"Maximum", p.max}, {"99.9%  ", p.p99_9}, {"99.0%  ", p.p99},   {"95.0%  ", p.p95},
      {"90.0%  ", p.p90}, {"Median ", p.median}, {"10.0%  ", p.p10},  {" 5.0%  ", p.p5},
      {" 1.0%  ", p.p1},  {" 0.1%  ", p.p0_1},  {"Minimum", p.min}};
  for (const auto& [label, v] : rows)
    out += std::string(label) + " " + name + ": " + fmt("%12.6f", v * scale) + unit + "\n";
}

}  // namespace

std::string perplexity_text(const PerplexityRun& r) {
  std::string out = "== " + r.path + ": " + std::to_string(r.ppl.tokens) + " scored tokens, " +
                    fmt("%.1f s", r.seconds) + fmt(", MoE calls fused %.0f, fallback %.0f",
                                                   double(r.fused_calls),
                                                   double(r.fallback_calls)) + " ==\n";
  if (!r.kl) {
    out += fmt("PPL = %.4f +/- %.4f", r.ppl.ppl, r.ppl.ppl_stderr) +
           fmt("   (mean NLL %.5f +/- %.5f nats)\n", r.ppl.mean_nll, r.ppl.nll_stderr);
  } else {
    const eval::KlComparison& k = *r.kl;
    out += "====== Perplexity statistics ======\n";
    out += fmt("Mean PPL(Q)                   : %10.6f +/- %10.6f\n", k.q.ppl, k.q.ppl_stderr);
    out += fmt("Mean PPL(base)                : %10.6f +/- %10.6f\n", k.base.ppl, k.base.ppl_stderr);
    out += fmt("Mean ln(PPL(Q)/PPL(base))     : %10.6f +/- %10.6f\n", k.ln_ratio, k.ln_ratio_stderr);
    out += fmt("Mean PPL(Q)/PPL(base)         : %10.6f +/- %10.6f\n", k.ppl_ratio, k.ppl_ratio_stderr);
    out += "====== KL divergence statistics ======\n";
    out += fmt("Mean    KLD: %12.6g +/- %12.6g\n", k.kld_mean, k.kld_stderr);
    percentile_lines(out, "KLD", k.kld, 1, "");
    out += "====== Token probability statistics ======\n";
    out += fmt("RMS Δp    : %8.4f +/- %8.4f %%\n", 100 * k.rms_dp, 100 * k.rms_dp_stderr);
    out += fmt("Same top p: %8.4f +/- %8.4f %%\n", 100 * k.same_top, 100 * k.same_top_stderr);
    percentile_lines(out, "Δp", k.dp, 100, " %");
  }
  if (!r.routing.empty()) {
    out += fmt("====== Routing (MoE layers; %g experts, top-%g) ======\n", double(r.experts),
               double(r.top_k));
    out += "layer  reached  router entropy  selection entropy  (nats; uniform = " +
           fmt("%.3f", std::log(double(r.experts))) + ")\n";
    for (const auto& t : r.routing)
      out += fmt("%5.0f", double(t.layer)) + fmt("  %7.0f", double(t.experts_reached())) +
             fmt("  %14.4f", t.mean_router_entropy()) + fmt("  %17.4f\n", t.selection_entropy());
  }
  return out;
}

nlohmann::ordered_json perplexity_json(const PerplexityRun& r) {
  nlohmann::ordered_json j;
  j["path"] = r.path;
  j["seconds"] = r.seconds;
  j["scored_tokens"] = r.ppl.tokens;
  j["moe_calls"] = {{"fused", r.fused_calls}, {"fallback", r.fallback_calls}};
  j["ppl"] = r.ppl.ppl;
  j["ppl_stderr"] = r.ppl.ppl_stderr;
  j["mean_nll"] = r.ppl.mean_nll;
  j["nll_stderr"] = r.ppl.nll_stderr;
  if (r.kl) {
    const eval::KlComparison& k = *r.kl;
    j["kl"] = {{"ppl_q", k.q.ppl},
               {"ppl_base", k.base.ppl},
               {"ln_ppl_ratio", k.ln_ratio},
               {"ln_ppl_ratio_stderr", k.ln_ratio_stderr},
               {"ppl_ratio", k.ppl_ratio},
               {"ppl_ratio_stderr", k.ppl_ratio_stderr},
               {"kld_mean", k.kld_mean},
               {"kld_stderr", k.kld_stderr},
               {"kld", percentiles_json(k.kld)},
               {"same_top", k.same_top},
               {"same_top_stderr", k.same_top_stderr},
               {"rms_dp", k.rms_dp},
               {"rms_dp_stderr", k.rms_dp_stderr},
               {"dp", percentiles_json(k.dp)}};
  }
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const auto& t : r.routing)
    layers.push_back({{"layer", t.layer},
                      {"experts_reached", t.experts_reached()},
                      {"router_entropy", t.mean_router_entropy()},
                      {"selection_entropy", t.selection_entropy()},
                      {"selected", t.selected}});
  j["routing"] = layers;
  return j;
}

}  // namespace moex::tools
