// rnn and rnn_grad on the GPU: cuDNN's RNN API (cudnnRNNForward, cudnnRNNBackwardData_v8,
// cudnnRNNBackwardWeights_v8) on rnn.cc's geometry (rnn::RnnGeometryOf on the attributes decoded once).
//
// cuDNN's cells are PaddlePaddle's: the same gate order (LSTM i, f, g, o; GRU r, z, candidate with the
// reset gate applied to R h + b_R), two bias vectors (CUDNN_RNN_DOUBLE_BIAS), pseudo-layer k = layer *
// directions + direction. Its padded sequence-major data layout is the op's [T, N, V] with zeros past a
// sequence's length, and its final states are taken at each sequence's last step, as on the CPU.
// WeightList is copied into cuDNN's weight space every run (one copy per contiguous run of gates, laid
// out once per geometry from cudnnGetRNNWeightParams), and the weight gradients are copied back out.
//
// Reserve holds cuDNN's reserve space (bytes) and DropoutState its dropout generator states, which
// rnn_grad restores: the GPU draws other dropout masks than the CPU. float32 runs with CUDNN_FMA_MATH
// (no TF32). A bound SequenceLength is copied to the host every run (cuDNN's data descriptors need the
// lengths there), so those instances are not replayable.
#include <cudnn.h>

#include <climits>
#include <vector>

#include "nn/nn_cuda_host.h"
#include "nn/rnn_slots.h"

namespace paddlec::ops::nn {
namespace {

using namespace rnn;  // NOLINT: the op's shared slots and attributes
using runtime::cuda::CudaContext;

template <class T>
constexpr cudnnDataType_t kCudnnType = std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;

cudnnRNNMode_t CellMode(RnnMode m) {
  switch (m) {
    case RnnMode::kLstm:
      return CUDNN_LSTM;
    case RnnMode::kGru:
      return CUDNN_GRU;
    case RnnMode::kRelu:
      return CUDNN_RNN_RELU;
    case RnnMode::kTanh:
      return CUDNN_RNN_TANH;
  }
  return CUDNN_RNN_TANH;
}

bool BindsSequenceLength(const KernelInit& init) {
  for (const auto& slot : init.attrs.op().inputs())
    if (slot.parameter() == kSequenceLength.name && slot.arguments_size() > 0) return true;
  return false;
}

/// One copy between a WeightList tensor and cuDNN's weight space (bytes).
struct WeightSegment {
  int tensor;
  size_t tensor_offset, space_offset, bytes;
};

/// The cuDNN side of one rnn or rnn_grad op instance: descriptors for the current geometry and
/// sequence lengths, the weight-space layout, the weight space and the device copy of the lengths.
/// Not thread-safe (one per kernel object).
template <class T>
class CudnnRnn {
 public:
  explicit CudnnRnn(const RnnAttrs& a) : attrs_(a) {}
  ~CudnnRnn() {
    if (rnn_desc_) cudnnDestroyRNNDescriptor(rnn_desc_);
    if (dropout_desc_) cudnnDestroyDropoutDescriptor(dropout_desc_);
    if (x_desc_) cudnnDestroyRNNDataDescriptor(x_desc_);
    if (y_desc_) cudnnDestroyRNNDataDescriptor(y_desc_);
    if (h_desc_) cudnnDestroyTensorDescriptor(h_desc_);
    if (m_desc_) cudnnDestroyTensorDescriptor(m_desc_);
    if (b_desc_) cudnnDestroyTensorDescriptor(b_desc_);
  }
  CudnnRnn(const CudnnRnn&) = delete;
  CudnnRnn& operator=(const CudnnRnn&) = delete;

  /// The sequence lengths of a run as cuDNN takes them (every one T without SequenceLength).
  StatusOr<std::vector<int32_t>> Lengths(KernelContext& ctx, const RnnGeometry& g) {
    std::vector<int32_t> len(static_cast<size_t>(g.n), static_cast<int32_t>(g.t));
    const Tensor* t = ctx.InOpt(kSequenceLength);
    if (t == nullptr) return len;
    PC_ASSIGN_OR_RETURN(std::vector<int64_t> values,
                        cuda::DeviceValues<int64_t>(cuda::Cuda(ctx), *t, "SequenceLength"));
    for (size_t n = 0; n < values.size() && n < len.size(); ++n) {
      if (values[n] < 0 || values[n] > g.t)
        return MakeError(ErrorCode::kInvalidArgument,
                         "SequenceLength {} is {} but must be in [0, {}] (Input's time steps)", n, values[n], g.t);
      if (values[n] == 0)
        return MakeError(ErrorCode::kUnimplemented,
                         "SequenceLength {} is 0: cuDNN's RNN needs every sequence to have a step (run it on the CPU)",
                         n);
      len[n] = static_cast<int32_t>(values[n]);
    }
    return len;
  }

  /// Points the descriptors at geometry `g`, lengths `len` and the dropout generator `states` (rebuilt
  /// only when one of them changes). `restore` restores saved generator states (rnn_grad) instead of
  /// initializing them (the forward pass's first run).
  Status Prepare(CudaContext& cc, const RnnGeometry& g, const std::vector<int32_t>& len, void* states,
                 size_t state_bytes, bool restore) {
    for (int64_t v : {g.t, g.n, g.i, g.h, g.dirs * g.h})
      if (v > INT_MAX)
        return MakeError(ErrorCode::kUnimplemented, "rnn on the GPU: a size of {} exceeds cuDNN's 32-bit sizes", v);
    if (!rnn_desc_) {
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateRNNDescriptor(&rnn_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateDropoutDescriptor(&dropout_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateRNNDataDescriptor(&x_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateRNNDataDescriptor(&y_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&h_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&m_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&b_desc_));
    }
    const bool dropout = attrs_.dropout();
    if (dropout && (states != states_ || !dropout_set_)) {
      const unsigned long long seed = static_cast<unsigned long long>(static_cast<int64_t>(attrs_.seed));
      if (restore)
        PC_CUDNN_RETURN_IF_ERROR(
            cudnnRestoreDropoutDescriptor(dropout_desc_, cc.cudnn(), attrs_.dropout_prob, states, state_bytes, seed));
      else
        PC_CUDNN_RETURN_IF_ERROR(
            cudnnSetDropoutDescriptor(dropout_desc_, cc.cudnn(), attrs_.dropout_prob, states, state_bytes, seed));
      states_ = states;
      dropout_set_ = true;
      key_.clear();  // the RNN descriptor holds the dropout descriptor's state: set it again
    } else if (!dropout && !dropout_set_) {
      // No dropout: no generator states are initialized.
      PC_CUDNN_RETURN_IF_ERROR(cudnnSetDropoutDescriptor(dropout_desc_, cc.cudnn(), 0.0f, nullptr, 0, 0));
      dropout_set_ = true;
    }
    std::vector<int64_t> key = {g.t, g.n, g.i, g.h, g.layers, g.dirs};
    key.insert(key.end(), len.begin(), len.end());
    if (key == key_) return Status::OK();
    auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
    const cudnnDataType_t type = kCudnnType<T>;
    PC_CUDNN_RETURN_IF_ERROR(
        cudnnSetRNNDescriptor_v8(rnn_desc_, CUDNN_RNN_ALGO_STANDARD, CellMode(attrs_.mode), CUDNN_RNN_DOUBLE_BIAS,
                                 g.dirs == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, type,
                                 type, std::is_same_v<T, float> ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH, i32(g.i),
                                 i32(g.h), i32(g.h), g.layers, dropout_desc_, CUDNN_RNN_PADDED_IO_ENABLED));
    T fill = 0;
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetRNNDataDescriptor(x_desc_, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED,
                                                       i32(g.t), i32(g.n), i32(g.i), len.data(), &fill));
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetRNNDataDescriptor(y_desc_, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED,
                                                       i32(g.t), i32(g.n), i32(g.dirs * g.h), len.data(), &fill));
    const int h_dims[3] = {g.cells(), i32(g.n), i32(g.h)}, h_strides[3] = {i32(g.n * g.h), i32(g.h), 1};
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetTensorNdDescriptor(h_desc_, type, 3, h_dims, h_strides));
    PC_CUDNN_RETURN_IF_ERROR(cudnnGetRNNWeightSpaceSize(cc.cudnn(), rnn_desc_, &weight_bytes_));
    PC_CUDNN_RETURN_IF_ERROR(cudnnGetRNNTempSpaceSizes(
        cc.cudnn(), rnn_desc_, attrs_.is_test ? CUDNN_FWD_MODE_INFERENCE : CUDNN_FWD_MODE_TRAINING, x_desc_,
        &work_bytes_, &reserve_bytes_));
    PC_ASSIGN_OR_RETURN(void* space, weights_.Get(cc, weight_bytes_));
    PC_RETURN_IF_ERROR(LayOutWeights(cc, g, space));
    host_lengths_ = len;  // the source of the copy below, kept until it is done
    PC_ASSIGN_OR_RETURN(int32_t * dev_len, lengths_.Get<int32_t>(cc, g.n));
    PC_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dev_len, host_lengths_.data(), host_lengths_.size() * sizeof(int32_t),
                                            cudaMemcpyHostToDevice, cc.stream()));
    key_ = std::move(key);
    return Status::OK();
  }

  /// The device copy of the lengths (valid after Prepare).
  StatusOr<const int32_t*> DeviceLengths(CudaContext& cc, int64_t n) {
    PC_ASSIGN_OR_RETURN(int32_t * p, lengths_.Get<int32_t>(cc, n));
    return static_cast<const int32_t*>(p);
  }

  /// Copies WeightList into the weight space.
  Status LoadWeights(CudaContext& cc, KernelContext& ctx, void** space) {
    PC_ASSIGN_OR_RETURN(*space, weights_.Get(cc, weight_bytes_));
    for (const WeightSegment& s : segments_)
      PC_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(static_cast<char*>(*space) + s.space_offset,
                          static_cast<const char*>(ctx.In(kWeightList, s.tensor).raw_data()) + s.tensor_offset, s.bytes,
                          cudaMemcpyDeviceToDevice, cc.stream()));
    return Status::OK();
  }

  /// Copies a weight-gradient space out to WeightList@GRAD.
  Status StoreWeightGrads(CudaContext& cc, KernelContext& ctx, const void* space) {
    for (const WeightSegment& s : segments_)
      if (Tensor* t = ctx.OutOpt(kGDWeightList, s.tensor))
        PC_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(t->raw_data()) + s.tensor_offset,
                                                static_cast<const char*>(space) + s.space_offset, s.bytes,
                                                cudaMemcpyDeviceToDevice, cc.stream()));
    return Status::OK();
  }

  cudnnRNNDescriptor_t rnn() const { return rnn_desc_; }
  cudnnRNNDataDescriptor_t x() const { return x_desc_; }
  cudnnRNNDataDescriptor_t y() const { return y_desc_; }
  cudnnTensorDescriptor_t h() const { return h_desc_; }
  size_t weight_bytes() const { return weight_bytes_; }
  size_t work_bytes() const { return work_bytes_; }
  size_t reserve_bytes() const { return reserve_bytes_; }
  /// A zeroed weight-gradient space (cuDNN adds the weight gradients into it).
  StatusOr<void*> WeightGradSpace(CudaContext& cc) {
    PC_ASSIGN_OR_RETURN(void* p, dweights_.Get(cc, weight_bytes_));
    PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0, weight_bytes_, cc.stream()));
    return p;
  }
  /// Bytes of cuDNN's dropout generator states.
  size_t DropoutStateBytes(CudaContext& cc) const {
    size_t bytes = 0;
    return cudnnDropoutGetStatesSize(cc.cudnn(), &bytes) == CUDNN_STATUS_SUCCESS ? bytes : 0;
  }

 private:
  /// Where each gate's matrix and bias of every cell sits in the weight space, merged into contiguous
  /// copies.
  Status LayOutWeights(CudaContext& cc, const RnnGeometry& g, void* space) {
    segments_.clear();
    const int G = g.gates;
    const size_t elem = sizeof(T);
    auto add = [&](int tensor, size_t tensor_offset, const void* addr, size_t bytes) {
      size_t space_offset = static_cast<size_t>(static_cast<const char*>(addr) - static_cast<const char*>(space));
      if (!segments_.empty()) {
        WeightSegment& last = segments_.back();
        if (last.tensor == tensor && last.tensor_offset + last.bytes == tensor_offset &&
            last.space_offset + last.bytes == space_offset) {
          last.bytes += bytes;
          return;
        }
      }
      segments_.push_back({tensor, tensor_offset, space_offset, bytes});
    };
    for (int k = 0; k < g.cells(); ++k) {
      const size_t in = static_cast<size_t>(g.layer_input(k / g.dirs)), h = static_cast<size_t>(g.h);
      for (int id = 0; id < 2 * G; ++id) {
        void* m = nullptr;
        void* b = nullptr;
        PC_CUDNN_RETURN_IF_ERROR(
            cudnnGetRNNWeightParams(cc.cudnn(), rnn_desc_, k, weight_bytes_, space, id, m_desc_, &m, b_desc_, &b));
        const bool input_side = id < G;
        const size_t gate = static_cast<size_t>(input_side ? id : id - G), cols = input_side ? in : h;
        if (m != nullptr)
          add(input_side ? RnnGeometry::WIh(k) : RnnGeometry::WHh(k), gate * h * cols * elem, m, h * cols * elem);
        if (b != nullptr) add(input_side ? g.BIh(k) : g.BHh(k), gate * h * elem, b, h * elem);
      }
    }
    return Status::OK();
  }

  RnnAttrs attrs_;
  cudnnRNNDescriptor_t rnn_desc_ = nullptr;
  cudnnDropoutDescriptor_t dropout_desc_ = nullptr;
  cudnnRNNDataDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr;
  cudnnTensorDescriptor_t h_desc_ = nullptr, m_desc_ = nullptr, b_desc_ = nullptr;
  std::vector<int64_t> key_;  // geometry and lengths the descriptors describe
  bool dropout_set_ = false;
  void* states_ = nullptr;  // the dropout generator states the descriptor uses
  size_t weight_bytes_ = 0, work_bytes_ = 0, reserve_bytes_ = 0;
  std::vector<WeightSegment> segments_;
  std::vector<int32_t> host_lengths_;
  DeviceScratch weights_, dweights_, lengths_;
};

template <class T>
class RnnKernel final : public OpKernel {
 public:
  explicit RnnKernel(const KernelInit& init)
      : attrs_(RnnAttrs::Decode(init.attrs)),
        cudnn_(SeededAttrs(attrs_, init.seed)),
        lengths_bound_(BindsSequenceLength(init)) {}
  bool Replayable() const override { return !lengths_bound_; }

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    PC_ASSIGN_OR_RETURN(RnnGeometry g, Geometry(ctx));
    const DType dt = ctx.In(kInput).dtype();
    PC_RETURN_IF_ERROR(ctx.ResizeOut(kOut, Dims{g.t, g.n, g.dirs * g.h}, dt));
    for (int s = 0; s < attrs_.states(); ++s)
      PC_RETURN_IF_ERROR(ctx.ResizeOut(kState, Dims{g.cells(), g.n, g.h}, dt, s));
    if (g.t == 0 || g.n == 0) {
      PC_RETURN_IF_ERROR(ctx.ResizeOut(kReserve, Dims{0}, DType::kUInt8));
      if (ctx.OutOpt(kDropoutState)) PC_RETURN_IF_ERROR(ctx.ResizeOut(kDropoutState, Dims{0}, DType::kUInt8));
      for (int s = 0; s < attrs_.states(); ++s)
        PC_RETURN_IF_ERROR(CopyDevice(cc, ctx.Out(kState, s).raw_data(), ctx.In(kPreState, s).raw_data(),
                                      ctx.In(kPreState, s).nbytes()));
      return Status::OK();
    }
    PC_ASSIGN_OR_RETURN(std::vector<int32_t> len, cudnn_.Lengths(ctx, g));
    void* states = nullptr;
    size_t state_bytes = 0;
    if (attrs_.dropout()) {
      state_bytes = cudnn_.DropoutStateBytes(cc);
      if (ctx.OutOpt(kDropoutState) == nullptr)
        return MakeError(ErrorCode::kInvalidArgument,
                         "rnn with dropout between layers on the GPU needs its DropoutState output bound (it keeps "
                         "cuDNN's dropout generator for the gradient)");
      PC_RETURN_IF_ERROR(ctx.ResizeOut(kDropoutState, Dims{static_cast<int64_t>(state_bytes)}, DType::kUInt8));
      states = ctx.Out(kDropoutState).raw_data();
    } else if (ctx.OutOpt(kDropoutState)) {
      PC_RETURN_IF_ERROR(ctx.ResizeOut(kDropoutState, Dims{0}, DType::kUInt8));
    }
    PC_RETURN_IF_ERROR(cudnn_.Prepare(cc, g, len, states, state_bytes, /*restore=*/false));
    PC_RETURN_IF_ERROR(ctx.ResizeOut(kReserve, Dims{static_cast<int64_t>(cudnn_.reserve_bytes())}, DType::kUInt8));
    void* weights = nullptr;
    PC_RETURN_IF_ERROR(cudnn_.LoadWeights(cc, ctx, &weights));
    PC_ASSIGN_OR_RETURN(void* work, cc.Workspace(cudnn_.work_bytes()));
    PC_ASSIGN_OR_RETURN(const int32_t* dev_len, cudnn_.DeviceLengths(cc, g.n));
    const bool lstm = attrs_.mode == RnnMode::kLstm;
    PC_CUDNN_RETURN_IF_ERROR(cudnnRNNForward(
        cc.cudnn(), cudnn_.rnn(), attrs_.is_test ? CUDNN_FWD_MODE_INFERENCE : CUDNN_FWD_MODE_TRAINING, dev_len,
        cudnn_.x(), ctx.In(kInput).raw_data(), cudnn_.y(), ctx.Out(kOut).raw_data(), cudnn_.h(),
        ctx.In(kPreState, 0).raw_data(), ctx.Out(kState, 0).raw_data(), cudnn_.h(),
        lstm ? ctx.In(kPreState, 1).raw_data() : nullptr, lstm ? ctx.Out(kState, 1).raw_data() : nullptr,
        cudnn_.weight_bytes(), weights, cudnn_.work_bytes(), work, cudnn_.reserve_bytes(),
        cudnn_.reserve_bytes() > 0 ? ctx.Out(kReserve).raw_data() : nullptr));
    return Status::OK();
  }

 private:
  /// The attributes with the dropout seed fixed: the attribute when set, else the op instance's.
  static RnnAttrs SeededAttrs(RnnAttrs a, uint64_t instance_seed) {
    if (a.seed == 0) a.seed = static_cast<int>(instance_seed & 0x7fffffff);
    return a;
  }
  StatusOr<RnnGeometry> Geometry(const KernelContext& ctx) const {
    std::vector<Dims> pre, weights;
    for (int i = 0; i < ctx.NumIn(kPreState); ++i) pre.push_back(ctx.In(kPreState, i).dims());
    for (int i = 0; i < ctx.NumIn(kWeightList); ++i) weights.push_back(ctx.In(kWeightList, i).dims());
    const Tensor* seq = ctx.InOpt(kSequenceLength);
    RnnGeometry g;
    PC_RETURN_IF_ERROR(RnnGeometryOf(ctx.In(kInput).dims(), pre, weights, seq ? &seq->dims() : nullptr, attrs_, g));
    return g;
  }

  RnnAttrs attrs_;
  CudnnRnn<T> cudnn_;
  bool lengths_bound_;
};

template <class T>
class RnnGradKernel final : public OpKernel {
 public:
  explicit RnnGradKernel(const KernelInit& init)
      : attrs_(RnnAttrs::Decode(init.attrs)), cudnn_(attrs_), lengths_bound_(BindsSequenceLength(init)) {}
  bool Replayable() const override { return !lengths_bound_; }

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    std::vector<Dims> pre, wdims;
    for (int i = 0; i < ctx.NumIn(kPreState); ++i) pre.push_back(ctx.In(kPreState, i).dims());
    for (int i = 0; i < ctx.NumIn(kWeightList); ++i) wdims.push_back(ctx.In(kWeightList, i).dims());
    const Tensor* seq = ctx.InOpt(kSequenceLength);
    RnnGeometry g;
    PC_RETURN_IF_ERROR(RnnGeometryOf(ctx.In(kInput).dims(), pre, wdims, seq ? &seq->dims() : nullptr, attrs_, g));
    const bool lstm = attrs_.mode == RnnMode::kLstm;
    Tensor* dx = ctx.OutOpt(kGDInput);
    Tensor* dhx = ctx.OutOpt(kGDPreState, 0);
    Tensor* dcx = lstm ? ctx.OutOpt(kGDPreState, 1) : nullptr;
    if (g.t == 0 || g.n == 0) {
      for (Tensor* t : {dx, dhx, dcx}) PC_RETURN_IF_ERROR(ZeroFill(cc, t));
      for (int i = 0; i < ctx.NumOut(kGDWeightList); ++i)
        PC_RETURN_IF_ERROR(ZeroFill(cc, ctx.OutOpt(kGDWeightList, i)));
      return Status::OK();
    }
    if (attrs_.is_test)
      return MakeError(ErrorCode::kInvalidArgument,
                       "rnn_grad of an rnn run with is_test = true: cuDNN kept no reserve");
    PC_ASSIGN_OR_RETURN(std::vector<int32_t> len, cudnn_.Lengths(ctx, g));
    void* states = nullptr;
    size_t state_bytes = 0;
    if (attrs_.dropout()) {
      const Tensor* ds = ctx.InOpt(kGDropoutState);
      if (ds == nullptr || ds->nbytes() != cudnn_.DropoutStateBytes(cc))
        return MakeError(ErrorCode::kInvalidArgument,
                         "rnn_grad with dropout on the GPU needs the DropoutState the GPU rnn op wrote");
      states = const_cast<void*>(ds->raw_data());
      state_bytes = ds->nbytes();
    }
    PC_RETURN_IF_ERROR(cudnn_.Prepare(cc, g, len, states, state_bytes, /*restore=*/true));
    const Tensor& reserve = ctx.In(kGReserve);
    if (reserve.nbytes() != cudnn_.reserve_bytes())
      return MakeError(ErrorCode::kInvalidArgument,
                       "Reserve holds {} bytes but cuDNN's reserve space for this rnn is {}: rnn_grad must read the "
                       "Reserve of the rnn op it differentiates, run on the same device",
                       reserve.nbytes(), cudnn_.reserve_bytes());
    void* weights = nullptr;
    PC_RETURN_IF_ERROR(cudnn_.LoadWeights(cc, ctx, &weights));
    PC_ASSIGN_OR_RETURN(void* work, cc.Workspace(cudnn_.work_bytes()));
    PC_ASSIGN_OR_RETURN(const int32_t* dev_len, cudnn_.DeviceLengths(cc, g.n));
    // cuDNN's backward-weights pass reads what its backward-data pass leaves in the reserve space, so
    // backward-data always runs, into scratch for gradients nobody asked for; absent output gradients
    // are zeros (cuDNN takes a null dhy / dcy as zeros, dy must be memory).
    const int64_t out_bytes = g.t * g.n * g.dirs * g.h * static_cast<int64_t>(sizeof(T));
    const void* dy = nullptr;
    if (const Tensor* t = ctx.InOpt(kGDOut)) {
      dy = t->raw_data();
    } else {
      PC_ASSIGN_OR_RETURN(void* z, zero_dy_.Get(cc, static_cast<size_t>(out_bytes)));
      PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(z, 0, static_cast<size_t>(out_bytes), cc.stream()));
      dy = z;
    }
    const Tensor* dhy = ctx.InOpt(kGDState, 0);
    const Tensor* dcy = lstm ? ctx.InOpt(kGDState, 1) : nullptr;
    void* dx_ptr = nullptr;
    if (dx != nullptr) {
      dx_ptr = dx->raw_data();
    } else {
      PC_ASSIGN_OR_RETURN(dx_ptr, dx_scratch_.Get(cc, ctx.In(kInput).nbytes()));
    }
    const void* y = ctx.In(kGOut).raw_data();
    PC_CUDNN_RETURN_IF_ERROR(cudnnRNNBackwardData_v8(
        cc.cudnn(), cudnn_.rnn(), dev_len, cudnn_.y(), y, dy, cudnn_.x(), dx_ptr, cudnn_.h(),
        ctx.In(kPreState, 0).raw_data(), dhy ? dhy->raw_data() : nullptr, dhx ? dhx->raw_data() : nullptr, cudnn_.h(),
        lstm ? ctx.In(kPreState, 1).raw_data() : nullptr, dcy ? dcy->raw_data() : nullptr,
        dcx ? dcx->raw_data() : nullptr, cudnn_.weight_bytes(), weights, cudnn_.work_bytes(), work,
        cudnn_.reserve_bytes(), const_cast<void*>(reserve.raw_data())));
    PC_ASSIGN_OR_RETURN(void* dweights, cudnn_.WeightGradSpace(cc));
    PC_CUDNN_RETURN_IF_ERROR(cudnnRNNBackwardWeights_v8(
        cc.cudnn(), cudnn_.rnn(), CUDNN_WGRAD_MODE_ADD, dev_len, cudnn_.x(), ctx.In(kInput).raw_data(), cudnn_.h(),
        ctx.In(kPreState, 0).raw_data(), cudnn_.y(), y, cudnn_.weight_bytes(), dweights, cudnn_.work_bytes(), work,
        cudnn_.reserve_bytes(), const_cast<void*>(reserve.raw_data())));
    return cudnn_.StoreWeightGrads(cc, ctx, dweights);
  }

 private:
  RnnAttrs attrs_;
  CudnnRnn<T> cudnn_;
  bool lengths_bound_;
  DeviceScratch zero_dy_, dx_scratch_;
};

template <class T>
KernelFactory RnnFactory() {
  return MakeKernelClass<RnnKernel<T>>();
}
template <class T>
KernelFactory RnnGradFactory() {
  return MakeKernelClass<RnnGradKernel<T>>();
}

}  // namespace

Status RegisterRnnCudaKernels(OpRegistry& r) {
  PC_CUDA_FLOAT_KERNELS(r, "rnn", RnnFactory);
  PC_CUDA_FLOAT_KERNELS(r, "rnn_grad", RnnGradFactory);
  return Status::OK();
}

}  // namespace paddlec::ops::nn
