// pot report: a self-contained HTML report (inline CSS and SVG, no scripts,
// fonts, images or network) from a run directory's report.json.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <sstream>

#include "cli_util.h"

namespace pot_cli {

namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------
// report.json, validated key by key (docs/cli.md, "pot report")

struct Challenge {
  uint64_t step = 0;
  std::string mode, verdict, check, reason;
};
struct Flag {
  std::string kind, message;
  uint64_t first_step = 0, last_step = 0;
};
struct Run {
  std::string name, run_id, verdict;
  uint64_t steps = 0;
  std::vector<double> losses;  // NaN where report.json has null
  std::vector<Challenge> challenges;
  std::vector<Flag> flags;
};
struct Verifier {
  std::string name, language, mode;
  uint64_t threads = 0, steps_verified = 0;
  double seconds = 0;
};
struct Report {
  std::string title;
  std::vector<Run> runs;
  std::vector<Verifier> verifiers;
  std::vector<std::pair<std::string, std::string>> summary;
  double training_seconds = 0, verification_seconds = 0;
};

[[noreturn]] void bad(const std::string &path, const std::string &what) {
  throw CliError(kExitUsage, "report.json: " + (path.empty() ? std::string("top level") : path) + ": " + what);
}

std::string child(const std::string &path, const std::string &key) { return path.empty() ? key : path + "." + key; }
std::string item(const std::string &path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// An object holding exactly the given keys.
const json &object(const json &j, const std::string &path, std::initializer_list<const char *> keys) {
  if (!j.is_object()) bad(path, std::string("expected an object, got ") + j.type_name());
  for (const char *k : keys)
    if (!j.contains(k)) bad(path, std::string("missing key \"") + k + "\"");
  for (const auto &kv : j.items())
    if (std::find_if(keys.begin(), keys.end(), [&](const char *k) { return kv.key() == k; }) == keys.end())
      bad(path, "unknown key \"" + kv.key() + "\"");
  return j;
}

std::string str(const json &obj, const std::string &path, const char *key) {
  const json &v = obj.at(key);
  if (!v.is_string()) bad(child(path, key), std::string("expected a string, got ") + v.type_name());
  return v.get<std::string>();
}

uint64_t integer(const json &obj, const std::string &path, const char *key) {
  const json &v = obj.at(key);
  if (!v.is_number_integer()) bad(child(path, key), std::string("expected an integer, got ") + v.type_name());
  if (!v.is_number_unsigned() && v.get<int64_t>() < 0) bad(child(path, key), "expected >= 0, got " + v.dump());
  return v.get<uint64_t>();
}

double number(const json &obj, const std::string &path, const char *key) {
  const json &v = obj.at(key);
  if (!v.is_number()) bad(child(path, key), std::string("expected a number, got ") + v.type_name());
  return v.get<double>();
}

const json &array(const json &obj, const std::string &path, const char *key) {
  const json &v = obj.at(key);
  if (!v.is_array()) bad(child(path, key), std::string("expected an array, got ") + v.type_name());
  return v;
}

std::string one_of(const json &obj, const std::string &path, const char *key, std::initializer_list<const char *> ok) {
  const std::string s = str(obj, path, key);
  std::string list;
  for (const char *o : ok) {
    if (s == o) return s;
    list += std::string(list.empty() ? "" : ", ") + o;
  }
  bad(child(path, key), "\"" + s + "\" is not one of " + list);
}

void step_in_run(uint64_t step, const std::string &path, const Run &run) {
  if (step < 1 || step > run.steps)
    bad(path, std::to_string(step) + " is outside the run's steps 1.." + std::to_string(run.steps));
}

Run parse_run(const json &j, const std::string &p) {
  object(j, p, {"name", "run_id", "steps", "losses", "challenges", "flags", "verdict"});
  Run r;
  r.name = str(j, p, "name");
  r.run_id = str(j, p, "run_id");
  if (r.run_id.empty() || r.run_id.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    bad(child(p, "run_id"), "\"" + r.run_id + "\" is not hex");
  r.steps = integer(j, p, "steps");
  r.verdict = str(j, p, "verdict");
  const json &losses = array(j, p, "losses");
  if (losses.size() != r.steps)
    bad(child(p, "losses"), std::to_string(losses.size()) + " values for steps = " + std::to_string(r.steps));
  for (size_t i = 0; i < losses.size(); ++i) {
    if (losses[i].is_null()) r.losses.push_back(std::numeric_limits<double>::quiet_NaN());
    else if (losses[i].is_number()) r.losses.push_back(losses[i].get<double>());
    else bad(item(child(p, "losses"), i), std::string("expected a number or null, got ") + losses[i].type_name());
  }
  const json &cs = array(j, p, "challenges");
  for (size_t i = 0; i < cs.size(); ++i) {
    const std::string cp = item(child(p, "challenges"), i);
    object(cs[i], cp, {"step", "mode", "verdict", "check", "reason"});
    Challenge c;
    c.step = integer(cs[i], cp, "step");
    step_in_run(c.step, child(cp, "step"), r);
    c.mode = one_of(cs[i], cp, "mode", {"bitwise", "norm_bucket"});
    c.verdict = one_of(cs[i], cp, "verdict", {"pass", "fail", "inconclusive"});
    c.check = str(cs[i], cp, "check");
    c.reason = str(cs[i], cp, "reason");
    r.challenges.push_back(std::move(c));
  }
  const json &fs = array(j, p, "flags");
  for (size_t i = 0; i < fs.size(); ++i) {
    const std::string fp = item(child(p, "flags"), i);
    object(fs[i], fp, {"kind", "first_step", "last_step", "message"});
    Flag f;
    f.kind = str(fs[i], fp, "kind");
    f.message = str(fs[i], fp, "message");
    f.first_step = integer(fs[i], fp, "first_step");
    f.last_step = integer(fs[i], fp, "last_step");
    step_in_run(f.first_step, child(fp, "first_step"), r);
    step_in_run(f.last_step, child(fp, "last_step"), r);
    if (f.last_step < f.first_step) bad(child(fp, "last_step"), "is before first_step");
    r.flags.push_back(std::move(f));
  }
  return r;
}

Report parse_report(const json &j) {
  object(j, "", {"title", "runs", "verifiers", "summary", "timings"});
  Report r;
  r.title = str(j, "", "title");
  const json &runs = array(j, "", "runs");
  for (size_t i = 0; i < runs.size(); ++i) r.runs.push_back(parse_run(runs[i], item("runs", i)));
  const json &vs = array(j, "", "verifiers");
  for (size_t i = 0; i < vs.size(); ++i) {
    const std::string vp = item("verifiers", i);
    object(vs[i], vp, {"name", "language", "threads", "mode", "steps_verified", "seconds"});
    r.verifiers.push_back({str(vs[i], vp, "name"), str(vs[i], vp, "language"), str(vs[i], vp, "mode"),
                           integer(vs[i], vp, "threads"), integer(vs[i], vp, "steps_verified"),
                           number(vs[i], vp, "seconds")});
  }
  const json &ss = array(j, "", "summary");
  for (size_t i = 0; i < ss.size(); ++i) {
    const std::string sp = item("summary", i);
    object(ss[i], sp, {"label", "value"});
    r.summary.emplace_back(str(ss[i], sp, "label"), str(ss[i], sp, "value"));
  }
  const json &t = object(j.at("timings"), "timings", {"training_seconds", "verification_seconds"});
  r.training_seconds = number(t, "timings", "training_seconds");
  r.verification_seconds = number(t, "timings", "verification_seconds");
  return r;
}

// ---------------------------------------------------------------------------
// HTML

std::string esc(const std::string &s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v, const char *format = "%.6g") {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::string coord(double v) { return num(v, "%.2f"); }

// The CSS class of a verdict: v-pass, v-fail, v-inconclusive; a free-form
// run verdict by its first word.
std::string verdict_class(const std::string &verdict) {
  std::string w;
  for (char c : verdict) {
    if (!std::isalpha(static_cast<unsigned char>(c))) break;
    w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (w == "pass" || w == "fail") return "v-" + w;
  return "v-inconclusive";
}

// About `target` round tick values (1, 2 or 5 times a power of ten) in [lo, hi].
std::vector<double> ticks(double lo, double hi, int target, double min_step = 0) {
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double n = raw / mag;
  double step = (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
  step = std::max(step, min_step);
  std::vector<double> out;
  const double first = std::ceil(lo / step);
  for (int i = 0; i <= 4 * target; ++i) {  // bounded, whatever the rounding
    const double t = (first + i) * step;
    if (!(t <= hi + step * 1e-9)) break;
    out.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return out;
}

constexpr double kWidth = 800, kHeight = 300, kLeft = 64, kRight = 16, kTop = 16, kBottom = 44;

struct Axis {
  double d0, d1, r0, r1;
  double operator()(double v) const { return r0 + (v - d0) * (r1 - r0) / (d1 - d0); }
};

void loss_chart(std::ostream &o, const Run &run) {
  // Domains: steps 1..N on x; the finite losses, padded by 5%, on y.
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double l : run.losses)
    if (std::isfinite(l)) lo = std::min(lo, l), hi = std::max(hi, l);
  if (!(lo <= hi)) lo = 0, hi = 1;
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    const double pad = std::fabs(hi) > 0 ? std::fabs(hi) * 0.1 : 0.5;
    lo -= pad, hi += pad;
  } else {
    const double pad = (hi - lo) * 0.05;
    lo -= pad, hi += pad;
  }
  const double x_lo = 0.5, x_hi = std::max(static_cast<double>(run.steps), 1.0) + 0.5;  // half a step of margin
  const Axis x{x_lo, x_hi, kLeft, kWidth - kRight}, y{lo, hi, kHeight - kBottom, kTop};
  const double top = kTop, bottom = kHeight - kBottom, left = kLeft, right = kWidth - kRight;

  o << "<svg class=\"chart\" viewBox=\"0 0 " << kWidth << " " << kHeight
    << "\" role=\"img\" aria-label=\"loss per step of " << esc(run.name) << "\">\n";
  // Flagged ranges, under everything else.
  for (size_t i = 0; i < run.flags.size(); ++i) {
    const Flag &f = run.flags[i];
    const double x0 = std::max(left, x(f.first_step - 0.5)), x1 = std::min(right, x(f.last_step + 0.5));
    o << "<g class=\"flag\"><title>" << esc(f.kind) << ", steps " << f.first_step << "-" << f.last_step << ": "
      << esc(f.message) << "</title><rect x=\"" << coord(x0) << "\" y=\"" << coord(top) << "\" width=\""
      << coord(std::max(1.0, x1 - x0)) << "\" height=\"" << coord(bottom - top) << "\"/><text x=\""
      << coord(x0 + 3) << "\" y=\"" << coord(top + 12 + 13 * static_cast<double>(i % 3)) << "\">" << esc(f.kind)
      << "</text></g>\n";
  }
  // Axes, grid and tick labels.
  o << "<g class=\"axis\">\n";
  for (double t : ticks(lo, hi, 5))
    o << "<line class=\"grid\" x1=\"" << coord(left) << "\" x2=\"" << coord(right) << "\" y1=\"" << coord(y(t))
      << "\" y2=\"" << coord(y(t)) << "\"/><text x=\"" << coord(left - 6) << "\" y=\"" << coord(y(t) + 4)
      << "\" text-anchor=\"end\">" << num(t, "%.4g") << "</text>\n";
  for (double t : ticks(x_lo, x_hi, 8, 1))
    o << "<line x1=\"" << coord(x(t)) << "\" x2=\"" << coord(x(t)) << "\" y1=\"" << coord(bottom) << "\" y2=\""
      << coord(bottom + 5) << "\"/><text x=\"" << coord(x(t)) << "\" y=\"" << coord(bottom + 18)
      << "\" text-anchor=\"middle\">" << num(t, "%.0f") << "</text>\n";
  o << "<line x1=\"" << coord(left) << "\" x2=\"" << coord(right) << "\" y1=\"" << coord(bottom) << "\" y2=\""
    << coord(bottom) << "\"/><line x1=\"" << coord(left) << "\" x2=\"" << coord(left) << "\" y1=\"" << coord(top)
    << "\" y2=\"" << coord(bottom) << "\"/>\n"
    << "<text x=\"" << coord((left + right) / 2) << "\" y=\"" << coord(kHeight - 6)
    << "\" text-anchor=\"middle\">step</text><text transform=\"rotate(-90)\" x=\"" << coord(-(top + bottom) / 2)
    << "\" y=\"14\" text-anchor=\"middle\">loss</text>\n</g>\n";
  // The curve, broken where a loss is not finite.
  std::string d;
  size_t run_len = 0;
  auto end_segment = [&] {
    if (run_len == 1) d += " h0.01";  // a lone point: round caps draw a dot
    run_len = 0;
  };
  for (uint64_t s = 1; s <= run.steps; ++s) {
    const double l = run.losses[s - 1];
    if (!std::isfinite(l)) {
      end_segment();
      continue;
    }
    d += (run_len == 0 ? (d.empty() ? "M" : " M") : " L") + coord(x(static_cast<double>(s))) + " " + coord(y(l));
    ++run_len;
  }
  end_segment();
  if (!d.empty()) o << "<path class=\"curve\" d=\"" << d << "\"/>\n";
  // Non-finite losses: marks on the top edge.
  for (uint64_t s = 1; s <= run.steps; ++s) {
    if (std::isfinite(run.losses[s - 1])) continue;
    const double cx = x(static_cast<double>(s));
    o << "<path class=\"nonfinite\" d=\"M" << coord(cx - 4) << " " << coord(top) << " L" << coord(cx + 4) << " "
      << coord(top) << " L" << coord(cx) << " " << coord(top + 7) << " Z\"><title>step " << s
      << ": the loss is NaN or infinite</title></path>\n";
  }
  // Challenged steps, coloured by verdict.
  for (const Challenge &c : run.challenges) {
    const double l = run.losses[c.step - 1];
    o << "<circle class=\"marker " << verdict_class(c.verdict) << "\" cx=\"" << coord(x(static_cast<double>(c.step)))
      << "\" cy=\"" << coord(std::isfinite(l) ? y(l) : top) << "\" r=\"5\"><title>step " << c.step << " ("
      << esc(c.mode) << "): " << esc(c.verdict) << ", check " << esc(c.check) << "</title></circle>\n";
  }
  o << "</svg>\n";
}

const char *kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328;
       max-width: 960px; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { margin-bottom: 0.1em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
.meta { color: #59636e; margin-top: 0; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border: 1px solid #d0d7de; padding: 0.3em 0.7em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 0.9em; word-break: break-all; }
.badge { display: inline-block; padding: 0 0.5em; border-radius: 1em; color: #fff; font-weight: 600; }
.badge.v-pass { background: #1a7f37; } .badge.v-fail { background: #cf222e; }
.badge.v-inconclusive { background: #6e7781; }
svg.chart { width: 100%; height: auto; background: #fff; border: 1px solid #d0d7de; }
.chart text { font-size: 11px; fill: #59636e; }
.chart .axis line { stroke: #8c959f; stroke-width: 1; } .chart .axis line.grid { stroke: #eaeef2; }
.chart .curve { fill: none; stroke: #0969da; stroke-width: 1.6; stroke-linejoin: round; stroke-linecap: round; }
.chart .flag rect { fill: #fb8f44; fill-opacity: 0.18; stroke: #fb8f44; stroke-opacity: 0.6; }
.chart .flag text { fill: #953800; font-weight: 600; }
.chart .nonfinite { fill: #cf222e; }
.chart .marker { stroke: #fff; stroke-width: 1.5; }
.chart .marker.v-pass { fill: #1a7f37; } .chart .marker.v-fail { fill: #cf222e; }
.chart .marker.v-inconclusive { fill: #6e7781; }
.legend { font-size: 0.85em; color: #59636e; } .legend span { margin-right: 1.2em; white-space: nowrap; }
.dot { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 50%; vertical-align: -0.05em; }
.dot.v-pass { background: #1a7f37; } .dot.v-fail { background: #cf222e; } .dot.v-inconclusive { background: #6e7781; }
.dot.flagged { border-radius: 0; background: rgba(251, 143, 68, 0.35); border: 1px solid #fb8f44; }
.dot.nonfinite { border-radius: 0; background: none; width: 0; height: 0; border-left: 0.4em solid transparent;
                 border-right: 0.4em solid transparent; border-top: 0.6em solid #cf222e; }
footer { margin-top: 3em; color: #59636e; font-size: 0.85em; }
)";

void run_section(std::ostream &o, const Run &run) {
  o << "<section class=\"run\">\n<h2>" << esc(run.name) << " <span class=\"badge " << verdict_class(run.verdict)
    << "\">" << esc(run.verdict) << "</span></h2>\n<p class=\"meta\">run id <code>" << esc(run.run_id)
    << "</code> &middot; " << run.steps << " steps &middot; " << run.challenges.size() << " challenge"
    << (run.challenges.size() == 1 ? "" : "s") << " &middot; " << run.flags.size() << " loss-curve flag"
    << (run.flags.size() == 1 ? "" : "s") << "</p>\n";
  loss_chart(o, run);
  o << "<p class=\"legend\"><span><i class=\"dot v-pass\"></i> challenge passed</span><span><i class=\"dot "
       "v-fail\"></i> challenge failed</span><span><i class=\"dot v-inconclusive\"></i> inconclusive</span>"
       "<span><i class=\"dot flagged\"></i> flagged steps</span><span><i class=\"dot nonfinite\"></i> NaN or "
       "infinite loss</span></p>\n";
  if (run.challenges.empty()) {
    o << "<p>No step of this run was challenged.</p>\n";
  } else {
    o << "<table class=\"challenges\">\n<tr><th>step</th><th>mode</th><th>verdict</th><th>failed check</th>"
         "<th>reason</th></tr>\n";
    for (const Challenge &c : run.challenges)
      o << "<tr><td class=\"n\">" << c.step << "</td><td>" << esc(c.mode) << "</td><td><span class=\"badge "
        << verdict_class(c.verdict) << "\">" << esc(c.verdict) << "</span></td><td><code>" << esc(c.check)
        << "</code></td><td>" << esc(c.reason) << "</td></tr>\n";
    o << "</table>\n";
  }
  if (!run.flags.empty()) {
    o << "<ul class=\"flags\">\n";
    for (const Flag &f : run.flags)
      o << "<li><b>" << esc(f.kind) << "</b>, steps " << f.first_step << "&ndash;" << f.last_step << ": "
        << esc(f.message) << "</li>\n";
    o << "</ul>\n";
  }
  o << "<p>Verdict: <span class=\"badge " << verdict_class(run.verdict) << "\">" << esc(run.verdict)
    << "</span></p>\n</section>\n";
}

std::string render(const Report &r) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
    << esc(r.title) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<header>\n<h1>" << esc(r.title)
    << "</h1>\n<p class=\"meta\">Proof-of-Training report &middot; pot " << esc(pot_version_string())
    << "</p>\n</header>\n";
  o << "<section>\n<h2>Summary</h2>\n<table class=\"summary\">\n";
  for (const auto &[label, value] : r.summary)
    o << "<tr><th>" << esc(label) << "</th><td>" << esc(value) << "</td></tr>\n";
  o << "</table>\n</section>\n";
  for (const Run &run : r.runs) run_section(o, run);
  o << "<section>\n<h2>Verifiers</h2>\n<table class=\"verifiers\">\n<tr><th>verifier</th><th>language</th>"
       "<th>threads</th><th>mode</th><th>steps verified</th><th>seconds</th><th>seconds per step</th></tr>\n";
  for (const Verifier &v : r.verifiers)
    o << "<tr><td>" << esc(v.name) << "</td><td>" << esc(v.language) << "</td><td class=\"n\">" << v.threads
      << "</td><td>" << esc(v.mode) << "</td><td class=\"n\">" << v.steps_verified << "</td><td class=\"n\">"
      << num(v.seconds, "%.3f") << "</td><td class=\"n\">"
      << (v.steps_verified ? num(v.seconds / static_cast<double>(v.steps_verified), "%.3f") : "&ndash;")
      << "</td></tr>\n";
  o << "</table>\n</section>\n<section>\n<h2>Timings</h2>\n<table class=\"timings\">\n<tr><th>training</th><td "
       "class=\"n\">"
    << num(r.training_seconds, "%.3f") << " s</td></tr>\n<tr><th>verification</th><td class=\"n\">"
    << num(r.verification_seconds, "%.3f") << " s</td></tr>\n";
  if (r.training_seconds > 0)
    o << "<tr><th>verification / training</th><td class=\"n\">"
      << num(100 * r.verification_seconds / r.training_seconds, "%.1f") << " %</td></tr>\n";
  o << "</table>\n</section>\n<footer>Written by <code>pot report</code> (pot " << esc(pot_version_string())
    << "). This page is self-contained: no scripts, fonts, images or network access.</footer>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace

void add_report_commands(CLI::App &app) {
  struct Opts {
    std::string dir, out;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App *rep = app.add_subcommand("report", "Write a self-contained HTML report from RUN_DIR/report.json");
  rep->add_option("RUN_DIR", o->dir, "directory holding report.json")->required();
  rep->add_option("--out", o->out, "HTML file to write (default RUN_DIR/report.html)");
  rep->add_flag("--json", o->json, "print JSON");
  rep->callback([o] {
    const std::string in = o->dir + "/report.json";
    const std::string out = o->out.empty() ? o->dir + "/report.html" : o->out;
    const auto bytes = read_file(in);
    json j;
    try {
      j = json::parse(bytes.begin(), bytes.end());
    } catch (const json::exception &e) {
      throw CliError(kExitUsage, in + ": not JSON: " + e.what());
    }
    const Report r = parse_report(j);
    const std::string html = render(r);
    write_file(out, std::vector<uint8_t>(html.begin(), html.end()));
    size_t challenges = 0;
    for (const Run &run : r.runs) challenges += run.challenges.size();
    emit(o->json, {{"out", out}, {"bytes", html.size()}, {"runs", r.runs.size()}, {"challenges", challenges}}, {out});
  });
}

}  // namespace pot_cli
