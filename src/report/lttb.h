// LTTB (Largest-Triangle-Three-Buckets, Steinarsson 2013): downsamples a time series for
// display, keeping its visual shape (peaks, dips, first and last points) with a bounded number
// of points.
//
// LttbSampler is the streaming form the plots use: samples are fed one at a time, in time
// order, straight from the database, and at most two buckets of points are held, so a series
// of ten million samples needs no more memory than one of ten thousand. Buckets split the time
// span [t_first, t_last] into equal intervals (rather than equal counts, which would need the
// number of samples before the first one is read); for regularly sampled series the two are
// the same, and with irregular sampling (finer intervals inside supervised scopes) equal-time
// buckets give each stretch of the time axis its share of the points. Empty buckets yield no
// point. A series of at most `max_points` samples comes back unchanged.
//
// Thread-safety: an LttbSampler is used by one thread; Lttb is a pure function.
#ifndef FOOTPRINT_REPORT_LTTB_H_
#define FOOTPRINT_REPORT_LTTB_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace footprint {

struct TimePoint {
  int64_t t;
  double v;
};

class LttbSampler {
 public:
  // `t_last` is the time of the last sample that will be added; `max_points` >= 3 (smaller
  // values are raised to 3: the first, the last and one point between them).
  LttbSampler(int64_t t_last, size_t max_points);

  // Adds the next sample. Times must increase strictly and not exceed t_last; the sample at
  // t_last is the last one.
  void Add(int64_t t, double v);

  // The kept points in time order: the first and last samples always among them, at most
  // max_points in all. The sampler is spent afterwards.
  std::vector<TimePoint> Finish();

  // Samples added so far.
  size_t count() const { return count_; }

 private:
  struct Bucket {
    int64_t index = -1;  // -1: empty
    std::vector<TimePoint> points;
    double sum_t = 0, sum_v = 0;
    void Clear() {
      index = -1;
      points.clear();
      sum_t = sum_v = 0;
    }
  };
  int64_t BucketOf(int64_t t) const;
  void AddToBucket(Bucket& b, int64_t index, TimePoint p);
  // Keeps the point of `b` that makes the largest triangle with the last kept point and
  // (t, v), the centre of what follows.
  void KeepFrom(const Bucket& b, double next_t, double next_v);
  void Bucketize(TimePoint p);

  int64_t t_last_;
  size_t max_points_;
  size_t count_ = 0;
  bool bucketing_ = false;      // false while every sample so far is kept (count <= max_points)
  std::vector<TimePoint> out_;  // out_.front() is the first sample once there is one
  Bucket current_, next_;
  TimePoint pending_{0, 0};
  bool has_pending_ = false;
};

// Downsamples the series (t[i], v[i]), times strictly increasing, to at most `max_points`
// points; returns the indices of the points kept, in order.
std::vector<size_t> Lttb(std::span<const int64_t> t, std::span<const double> v, size_t max_points);

}  // namespace footprint

#endif  // FOOTPRINT_REPORT_LTTB_H_
