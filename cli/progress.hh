// A progress line on stderr for long work: what is done of what total, the rate in decimal
// units and the time left, redrawn in place (\r) a few times a second and ended with a
// newline. It shows only when stderr is a terminal and only once the work has taken longer
// than a delay (1 s; FZG_PROGRESS_DELAY=seconds changes it), so that a pipe or a log file
// never receives anything extra and short work prints nothing at all.
//
//   Progress reading("reading field.f32", ProgressUnit::bytes, size);
//   ... reading.set(done); ...
//   reading.finish();   // "reading field.f32: 4.00 GB in 3.1 s (1.29 GB/s)"
//
// Work with no measure of its own progress (one library call) uses ProgressUnit::time: the
// line shows the time elapsed and nothing invented. One line at a time: a Progress made while
// another is drawing stays silent, so that nested steps do not fight over the line.
// Header-only; progress_line() is the pure formatting function.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace fzg::cli {

// Decimal units, as fzg's throughput figures: "512 B", "1.50 kB", "64.0 MB", "4.00 GB".
inline std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  if (!(bytes >= 0) || !std::isfinite(bytes)) return "? B";
  int u = 0;
  while (bytes >= 999.5 && u < 6) bytes /= 1000, ++u;
  char text[32];
  if (u == 0) std::snprintf(text, sizeof text, "%.0f B", bytes);
  else std::snprintf(text, sizeof text, bytes < 9.995 ? "%.2f %s" : bytes < 99.95 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return text;
}

// "850 MB/s", "1.25 GB/s" (decimal).
inline std::string format_rate(double bytes_per_second) { return format_bytes(bytes_per_second) + "/s"; }

// "0.4 s", "12 s", "3 min 05 s", "2 h 07 min".
inline std::string format_seconds(double s) {
  if (!(s >= 0) || !std::isfinite(s)) return "? s";
  char text[32];
  if (s < 9.95) std::snprintf(text, sizeof text, "%.1f s", s);
  else if (s < 59.5) std::snprintf(text, sizeof text, "%.0f s", s);
  else if (s < 3599.5) {
    const long t = std::lround(s);
    std::snprintf(text, sizeof text, "%ld min %02ld s", t / 60, t % 60);
  } else {
    const long t = std::lround(s / 60);
    std::snprintf(text, sizeof text, "%ld h %02ld min", t / 60, t % 60);
  }
  return text;
}

enum class ProgressUnit {
  bytes,  // done and total are bytes: shows a rate
  count,  // done and total count things (runs): shows "3 of 10 <noun>"
  time,   // no measure of progress: shows the time elapsed alone
};

struct ProgressState {
  std::string what;          // "reading field.f32"
  ProgressUnit unit = ProgressUnit::time;
  std::string noun = "runs"; // for ProgressUnit::count
  double done = 0, total = 0;  // total 0: unknown
  // The share of the work done, when the counted things differ in cost (bench's runs on
  // fields of different sizes): work_done of work_total gives the percentage and the ETA.
  double work_done = 0, work_total = 0;
  double elapsed_s = 0;
  // When `done` last moved (seconds, as elapsed_s; negative: now). The time left is estimated
  // then and counts down in between, rather than growing while one long run goes on.
  double updated_s = -1;
  bool finished = false;
};

// The line for a state, without \r or newline. Pure.
//   reading a.f32: 1.20 GB of 4.00 GB (30%), 850 MB/s, ETA 3.3 s
//   reading standard input: 1.20 GB, 850 MB/s, 1.4 s
//   reading a.f32: 4.00 GB in 3.1 s (1.29 GB/s)                       (finished)
//   eval: 3 of 10 round trips (30%), 2.1 s, ETA 4.9 s
//   eval: 10 round trips in 7.0 s                                    (finished)
//   compressing 4.00 GB: 3.2 s
inline std::string progress_line(const ProgressState& s) {
  std::string line = s.what + ": ";
  const double t = s.elapsed_s;
  double fraction = -1;  // unknown
  if (s.work_total > 0) fraction = std::min(1.0, s.work_done / s.work_total);
  else if (s.total > 0) fraction = std::min(1.0, s.done / s.total);
  auto percent = [&] { return " (" + std::to_string(int(std::floor(100 * fraction))) + "%)"; };
  auto eta = [&]() -> std::string {
    const double at = s.updated_s >= 0 && s.updated_s <= t ? s.updated_s : t;
    if (fraction <= 0 || fraction >= 1 || at <= 0) return "";
    return ", ETA " + format_seconds(std::max(0.0, at * (1 - fraction) / fraction - (t - at)));
  };
  switch (s.unit) {
    case ProgressUnit::bytes: {
      const std::string rate = t > 0 ? format_rate(s.done / t) : "? B/s";
      if (s.finished) return line + format_bytes(s.done) + " in " + format_seconds(t) + " (" + rate + ")";
      line += format_bytes(s.done);
      if (s.total > 0) line += " of " + format_bytes(s.total) + percent();
      line += ", " + rate;
      return line + (fraction >= 0 ? eta() : ", " + format_seconds(t));
    }
    case ProgressUnit::count: {
      const auto n = [](double v) { return std::to_string((long long)std::llround(v)); };
      if (s.finished) return line + n(s.done) + " " + s.noun + " in " + format_seconds(t);
      line += n(s.done);
      if (s.total > 0) line += " of " + n(s.total);
      line += " " + s.noun;
      if (fraction >= 0) line += percent();
      return line + ", " + format_seconds(t) + eta();
    }
    case ProgressUnit::time: break;
  }
  return line + format_seconds(t);
}

inline bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

// FZG_PROGRESS_DELAY (seconds), else 1.
inline double progress_delay() {
  if (const char* text = std::getenv("FZG_PROGRESS_DELAY")) {
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (end != text && v >= 0 && std::isfinite(v)) return v;
  }
  return 1.0;
}

class Progress {
 public:
  Progress(std::string what, ProgressUnit unit, double total = 0, bool enabled = stderr_is_terminal(),
           std::FILE* out = stderr, double delay_s = progress_delay())
      : out_(out), delay_s_(delay_s), start_(Clock::now()) {
    state_.what = std::move(what);
    state_.unit = unit;
    state_.total = total;
    // One line at a time: the outermost Progress draws.
    enabled_ = enabled && out != nullptr && drawing().fetch_add(1) == 0;
    if (!enabled_) {
      if (enabled && out) drawing().fetch_sub(1);
      return;
    }
    ticker_ = std::thread([this] { tick(); });
  }
  ~Progress() {
    // Unwinding: erase the line, so that the error that follows stands alone.
    if (std::uncaught_exceptions() > 0) stop(false);
    else finish();
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  void set(double done) { set(done, state_.work_done); }
  void set(double done, double work_done) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done != state_.done || work_done != state_.work_done) state_.updated_s = elapsed();
    state_.done = done;
    state_.work_done = work_done;
  }
  void set_total(double total, double work_total = 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.total = total;
    state_.work_total = work_total;
  }
  void set_what(std::string what) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.what = std::move(what);
  }
  void set_noun(std::string noun) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.noun = std::move(noun);
  }
  // Erases the line and stops redrawing it until resume(), for other output to stderr.
  void suspend() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!enabled_) return;
    erase();
    suspended_ = true;
  }
  void resume() {
    std::lock_guard<std::mutex> lock(mutex_);
    suspended_ = false;
  }
  // Ends the line with its final state and a newline, if the work took longer than the
  // delay; otherwise prints nothing. Later calls do nothing.
  void finish() { stop(true); }

 private:
  using Clock = std::chrono::steady_clock;

  static std::atomic<int>& drawing() {
    static std::atomic<int> count{0};
    return count;
  }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  void stop(bool final_line) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!enabled_ || stopped_) return;
      stopped_ = true;
    }
    wake_.notify_all();
    ticker_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    state_.elapsed_s = elapsed();
    if (final_line && state_.elapsed_s >= delay_s_) {
      state_.finished = true;
      if (state_.unit != ProgressUnit::count && state_.total > 0 && state_.done < state_.total) state_.finished = false;
      draw();
      std::fputc('\n', out_);
      std::fflush(out_);
    } else {
      erase();
    }
    drawing().fetch_sub(1);
  }

  // Redraws about four times a second once the delay has passed.
  void tick() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopped_) {
      const double t = elapsed();
      if (t >= delay_s_ && !suspended_) {
        state_.elapsed_s = t;
        draw();
      }
      const double wait = t < delay_s_ ? std::min(0.25, delay_s_ - t) : 0.25;
      wake_.wait_for(lock, std::chrono::duration<double>(wait), [this] { return stopped_; });
    }
  }

  // Under mutex_.
  void draw() {
    const std::string line = progress_line(state_);
    std::string text = "\r" + line;
    if (line.size() < width_) text += std::string(width_ - line.size(), ' ');
    width_ = line.size();
    std::fputs(text.c_str(), out_);
    std::fflush(out_);
  }
  void erase() {
    if (width_ == 0) return;
    std::fputs(("\r" + std::string(width_, ' ') + "\r").c_str(), out_);
    std::fflush(out_);
    width_ = 0;
  }

  std::FILE* out_;
  double delay_s_;
  Clock::time_point start_;
  bool enabled_ = false;
  bool stopped_ = false;
  bool suspended_ = false;
  size_t width_ = 0;
  ProgressState state_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
};

}  // namespace fzg::cli
