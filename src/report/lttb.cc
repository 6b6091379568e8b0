#include "report/lttb.h"

#include <algorithm>
#include <cmath>

namespace footprint {

LttbSampler::LttbSampler(int64_t t_last, size_t max_points)
    : t_last_(t_last), max_points_(std::max<size_t>(3, max_points)) {
  out_.reserve(max_points_ + 1);
}

void LttbSampler::Add(int64_t t, double v) {
  ++count_;
  if (bucketing_) {
    Bucketize({t, v});
    return;
  }
  out_.push_back({t, v});
  if (out_.size() <= max_points_) return;
  // One sample too many to keep them all: from here on, one point per bucket. The samples
  // held so far go through the buckets as if they had just arrived.
  bucketing_ = true;
  std::vector<TimePoint> held(out_.begin() + 1, out_.end());
  out_.resize(1);
  for (const TimePoint& p : held) Bucketize(p);
}

int64_t LttbSampler::BucketOf(int64_t t) const {
  const int64_t buckets = static_cast<int64_t>(max_points_) - 2;
  const double span = static_cast<double>(t_last_ - out_.front().t);
  if (span <= 0) return 0;
  auto k = static_cast<int64_t>(static_cast<double>(t - out_.front().t) / span *
                                static_cast<double>(buckets));
  return std::clamp<int64_t>(k, 0, buckets - 1);
}

void LttbSampler::AddToBucket(Bucket& b, int64_t index, TimePoint p) {
  b.index = index;
  b.points.push_back(p);
  b.sum_t += static_cast<double>(p.t - out_.front().t);
  b.sum_v += p.v;
}

void LttbSampler::KeepFrom(const Bucket& b, double next_t, double next_v) {
  const TimePoint a = out_.back();
  const double at = static_cast<double>(a.t - out_.front().t);
  const double to_next_t = next_t - at, to_next_v = next_v - a.v;
  const TimePoint* best = &b.points.front();
  double best_area = -1;
  for (const TimePoint& p : b.points) {
    // Twice the triangle's area: |cross(next - a, p - a)|.
    double pt = static_cast<double>(p.t - out_.front().t) - at;
    double area = std::fabs(to_next_t * (p.v - a.v) - pt * to_next_v);
    if (area > best_area) {
      best_area = area;
      best = &p;
    }
  }
  out_.push_back(*best);
}

void LttbSampler::Bucketize(TimePoint p) {
  // The newest sample is held back: it is the last point if nothing follows.
  if (!has_pending_) {
    pending_ = p;
    has_pending_ = true;
    return;
  }
  const TimePoint q = pending_;
  pending_ = p;
  const int64_t k = BucketOf(q.t);
  if (current_.index < 0 || (k == current_.index && next_.index < 0)) {
    AddToBucket(current_, k, q);
  } else if (next_.index < 0 || k == next_.index) {
    AddToBucket(next_, k, q);
  } else {  // q opens a third bucket: next_ is complete, so current_ can choose its point
    const double n = static_cast<double>(next_.points.size());
    KeepFrom(current_, next_.sum_t / n, next_.sum_v / n);
    std::swap(current_, next_);
    next_.Clear();
    AddToBucket(next_, k, q);
  }
}

std::vector<TimePoint> LttbSampler::Finish() {
  if (bucketing_ && has_pending_) {
    const double last_t = static_cast<double>(pending_.t - out_.front().t);
    if (next_.index >= 0) {
      const double n = static_cast<double>(next_.points.size());
      KeepFrom(current_, next_.sum_t / n, next_.sum_v / n);
      KeepFrom(next_, last_t, pending_.v);
    } else if (current_.index >= 0) {
      KeepFrom(current_, last_t, pending_.v);
    }
    out_.push_back(pending_);
  }
  current_.Clear();
  next_.Clear();
  has_pending_ = false;
  return std::move(out_);
}

std::vector<size_t> Lttb(std::span<const int64_t> t, std::span<const double> v, size_t max_points) {
  std::vector<size_t> kept;
  const size_t n = std::min(t.size(), v.size());
  if (n == 0) return kept;
  LttbSampler sampler(t[n - 1], max_points);
  for (size_t i = 0; i < n; ++i) sampler.Add(t[i], v[i]);
  size_t i = 0;
  for (const TimePoint& p : sampler.Finish()) {
    i = static_cast<size_t>(std::lower_bound(t.begin() + static_cast<ptrdiff_t>(i),
                                             t.begin() + static_cast<ptrdiff_t>(n), p.t) -
                            t.begin());
    kept.push_back(i);
  }
  return kept;
}

}  // namespace footprint
