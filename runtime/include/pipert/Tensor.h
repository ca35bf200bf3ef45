// Tensor<T>: the runtime's only data container, a dense row-major matrix of
// float or double. Activations are (tokens x hidden), weights (in x out),
// biases (1 x out). Deliberately minimal: owning storage, shape, element access;
// the arithmetic lives in Kernels.h.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipert {

template <typename T>
class Tensor {
public:
  Tensor() = default;
  Tensor(size_t rows, size_t cols, T fill = T(0)) : rows_(rows), cols_(cols), data_(rows * cols, fill) {}

  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  size_t size() const { return data_.size(); }
  bool empty() const { return data_.empty(); }
  bool sameShape(const Tensor &other) const { return rows_ == other.rows_ && cols_ == other.cols_; }
  std::string shapeString() const { return std::to_string(rows_) + "x" + std::to_string(cols_); }

  T &operator()(size_t r, size_t c) { return data_[r * cols_ + c]; }
  const T &operator()(size_t r, size_t c) const { return data_[r * cols_ + c]; }
  T &operator[](size_t i) { return data_[i]; }
  const T &operator[](size_t i) const { return data_[i]; }
  T *data() { return data_.data(); }
  const T *data() const { return data_.data(); }
  T *row(size_t r) { return data_.data() + r * cols_; }
  const T *row(size_t r) const { return data_.data() + r * cols_; }
  const std::vector<T> &values() const { return data_; }

  // Reshape to rows x cols, every element `fill` (old contents are discarded).
  void reset(size_t rows, size_t cols, T fill = T(0)) {
    rows_ = rows;
    cols_ = cols;
    data_.assign(rows * cols, fill);
  }
  void fill(T value) { data_.assign(data_.size(), value); }
  // Frees the storage (stored activations are released this way).
  void release() {
    rows_ = cols_ = 0;
    std::vector<T>().swap(data_);
  }

  // Bitwise-equal contents and shape (what "exactly equal" means in the tests).
  bool identical(const Tensor &other) const { return sameShape(other) && data_ == other.data_; }

private:
  size_t rows_ = 0;
  size_t cols_ = 0;
  std::vector<T> data_;
};

// Element-wise conversion, e.g. to compare an fp32 run with an fp64 one.
template <typename To, typename From>
Tensor<To> tensorCast(const Tensor<From> &in) {
  Tensor<To> out(in.rows(), in.cols());
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = static_cast<To>(in[i]);
  return out;
}

} // namespace pipert
