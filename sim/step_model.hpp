// The step model of the rule book (sections 3-4): the single place where rules M6-M14 and M16-M25 live.
//
// SubgraphModel::compile applies the static rules of one subgraph and turns its ops into symbolic regions
// (tile rows, tile columns, reduction range, full extent). A StepWalker then evaluates the steps one by one:
// which slices each step loads and reuses, what each op computes, what is stored, the working set with its
// terms, and the roofline latency. The analytic evaluator sums it, the SystemC engine replays it, and the
// solver calls evaluate_fast, which counts repeated tiles instead of re-simulating them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <variant>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/violation.hpp"

namespace mlsys {

// The least any schedule pays to compute `op`: base per native tile of its output (M23, M24 padding; a chain
// head's streamed strips add up to its whole output), times K/n_k under native-k. Lower bounds build on it.
double compute_floor(const Problem& problem, const Graph& graph, int op, MatmulCompute model);
// What `op` pays wherever it is neither a link's head nor in-chain: every output tile padded on both axes
// (M23, M24), times K/n_k under native-k. compute_floor is this unless a role streams an axis.
double padded_compute_floor(const Problem& problem, const Graph& graph, int op, MatmulCompute model);
// The least `op` pays in a run where it is a head or in-chain on a path into MatMul `tail`'s input `side`
// (0 LHS, 1 RHS), and into no other tail: proportional on that axis, once per column (row) of the tail's
// grid (M24), or its padded price if that is less. At least compute_floor, which takes the cheapest role.
double compute_toward_tail(const Problem& problem, const Graph& graph, int op, int tail, int side,
                           MatmulCompute model);
// compute_floor of every op, by op index.
std::vector<double> compute_floors(const Problem& problem, const Graph& graph, MatmulCompute model);
// The least a MatMul `head` computes per tile of its tail when it heads a link into the tail's input `side`
// (0 LHS, 1 RHS): its rows (columns) across the whole streamed side, at least one native row (column) of
// tiles, proportional on the streamed axis and reducing fully (M17, M24). Lower bounds build on it.
double head_compute_per_tail_tile(const Problem& problem, const Graph& graph, int head, int side,
                                  MatmulCompute model);

// One axis of a symbolic region.
enum class AxisKind : uint8_t { TileRows, TileCols, Reduction, Full };
struct Axis {
  AxisKind kind = AxisKind::Full;
  int64_t extent = 0;  // Full: [0, extent); Reduction: the range is clipped to [0, extent)
  bool operator==(const Axis&) const = default;
};
struct Form {
  Axis rows, cols;
  bool operator==(const Form&) const = default;
};

// When an op runs within a tile (M18). Bits so that merged slice forms can be active for several reasons.
enum RunsAt : uint8_t { kEveryStep = 1, kFirstKStep = 2, kLastKStep = 4 };

struct SliceUse {
  int tensor = -1;
  Region region;
  bool loaded = false;  // false: identical slice was in the previous step's set (M21)
};
struct OpCompute {
  int op = -1;
  Region region;  // output region the op computes on (for a prologue: the tile's bounding strip)
  double cost = 0;
};
struct Store {
  int tensor = -1;
  Region region;
};

// Everything the rule book says about one step. Filled only when a caller asks for it.
struct StepDetail {
  StepRef ref;
  std::vector<SliceUse> slices;
  std::vector<OpCompute> computes;
  std::vector<Store> stores;
  int64_t load_elements = 0, store_elements = 0;
  double compute = 0, memory_time = 0, latency = 0;
  WorkingSet working_set;  // with terms
};

struct SubgraphResult {
  double latency = 0;                        // L_i (M25)
  double compute_time = 0, memory_time = 0;  // sums of the per-step terms
  double compute_bound_latency = 0;          // latency of the steps whose compute >= memory time
  int64_t steps = 0;
  int64_t peak_working_set = 0;
  std::optional<RuleViolation> violation;  // M17 or M20 at a step
  // evaluate_fast only: the answer needs a step-by-step walk (numeric M17 checks, or two forms of one tensor
  // that may coincide) of `steps` steps, more than the caller's budget; nothing was evaluated.
  bool walk_refused = false;
};

class StepWalker;

class SubgraphModel {
 public:
  // Applies M6, M7, M9, M10, M11, M12-M13, M14 in the rule book's order. `retained_in` is R_{i-1}.
  static std::variant<SubgraphModel, RuleViolation> compile(const Problem& problem, const Graph& graph,
                                                            const SubgraphSpec& spec, int subgraph_index,
                                                            const std::vector<int>& retained_in,
                                                            const ModelOptions& options);

  // For a search that tries many granularities of one subgraph: compile_structure applies the rules that do
  // not depend on [w, h, k] (M7-M9, M10's shapes) and derives the symbolic regions once; with_granularity
  // then applies M6, M10's tile counts, M11, M12-M13 and M14 to a copy. compile() is
  // exactly the two, with M6 first as the rule book orders it. A structure is not evaluated before
  // with_granularity.
  static std::variant<SubgraphModel, RuleViolation> compile_structure(
      const Problem& problem, const Graph& graph, const std::vector<int>& ops, const std::vector<int>& retain,
      int subgraph_index, const std::vector<int>& retained_in, const ModelOptions& options);
  std::variant<SubgraphModel, RuleViolation> with_granularity(
      const Granularity& granularity, std::optional<std::vector<int64_t>> traversal = std::nullopt) const;
  // The same rules applied in place, so a search can try many granularities on one copy of the structure
  // without copying it for each. Every granularity-dependent member is reset, so it may follow a rejection;
  // after a rejection the model must not be evaluated until a later call succeeds.
  std::optional<RuleViolation> set_granularity(const Granularity& granularity,
                                               std::optional<std::vector<int64_t>> traversal = std::nullopt);

  // Replaces the traversal order (M11; nullopt = raster). The other rules do not depend on the order, so a
  // search that tries several orders of one granularity compiles once.
  std::optional<RuleViolation> set_traversal(std::optional<std::vector<int64_t>> order);

  // Step by step, in traversal order (M16). Stops at the first violation. `on_step`, if set, receives every
  // step that passed, with its full detail (verify --steps).
  SubgraphResult simulate(const std::function<void(const StepDetail&)>& on_step = nullptr) const;
  // Same latency and peak working set; tiles with the same slice pattern are evaluated once and counted.
  // A violation is located exactly (by falling back to simulate()) unless the caller only needs to know that
  // the subgraph does not fit: a search rejects most candidates for OOM and has no use for the step.
  // The cost of an answer does not grow with the number of steps, except where a walk is needed (see
  // counts_tile_classes); a walk of more than `walk_budget` steps is refused (SubgraphResult::walk_refused).
  enum class Violations { Locate, Summarize };
  static constexpr int64_t kNoWalkLimit = INT64_MAX;
  SubgraphResult evaluate_fast(Violations violations = Violations::Locate,
                               int64_t walk_budget = kNoWalkLimit) const;

  // Whether evaluate_fast counts tile classes at this granularity instead of walking every step (it walks
  // when M17 needs numeric checks or two forms of one tensor can give the same slice).
  bool counts_tile_classes() const {
    return checks_.empty() && !(aliasing_ && (aliased_once_ || aliased_forms_can_coincide()));
  }
  bool reads_a_tensor_in_two_forms() const { return aliasing_; }
  // For a floor that must hold at every larger size (the cover bound's, docs/bounds.md#theorem-6): the
  // working set counts each tensor read in several forms by its largest slice at the step, as if its forms
  // coincided. That is never above the rule book's count (distinct slices), and it only grows with w, h and
  // k, whereas two forms that coincide at a larger size can make the real working set shrink. Off by default.
  void count_each_tensors_largest_form_only(bool on) { aliased_once_ = on; }

  // The elements of each external, not retained-in input that every traversal order loads at the current
  // granularity (M19, M21), in first-read order. A lower bound for any order, used by the cover bound
  // (docs/bounds.md#theorem-6): each element read is loaded at least once, and a slice read in one form
  // along a split reduction (nk >= 2) never repeats the previous step's, so every step loads it again.
  struct TensorLoads {
    int tensor;
    int64_t elements;
  };
  std::vector<TensorLoads> loads_every_order_pays() const;

  // A split reduction's last k-steps (docs/bounds.md#theorem-8), summed over every tile at the current tile
  // counts: the compute of the ops that run only there, and upper bounds, for every k whose last k-step is
  // at most `last_k` long, on the compute of the ops that run at every step there and on the elements loaded
  // and stored there (infinite where no bound is known). Meaningful only with nk >= 2.
  struct LastKSteps {
    double last_only_compute = 0;
    double every_step_compute_max = 0;
    double elements_max = 0;
  };
  LastKSteps last_k_steps(int64_t last_k) const;

  // The k-steps before the last of a split reduction, from the first (or, `skip_first`, the second) of each
  // tile (docs/bounds.md#theorem-11), summed over every tile at the current granularity: the compute of the
  // ops that run there; the elements every one of them loads (M19, M21): the slices of forms that follow the
  // reduction at every step, of tensors read in no other form, whose k-range the previous step did not have;
  // and the compute of every step of the subgraph. `last_excess`: over every tile, how far the last k-step's
  // memory time exceeds its compute, counting the loads of those same forms and the store of every evicted
  // output's tile (M22). Zero with nk < 2.
  struct InnerKSteps {
    double compute = 0;
    double elements = 0;
    double all_steps_compute = 0;
    double last_excess = 0;
  };
  InnerKSteps inner_k_steps(bool skip_first) const;

  // Facts the schedule-level rules and the drivers need.
  int index() const { return index_; }
  const std::vector<int>& ops() const { return ops_; }
  int64_t tiles() const { return nrows_ * ncols_; }
  int64_t grid_height() const { return grid_h_; }  // H_g, W_g (M10): fixed by the structure
  int64_t grid_width() const { return grid_w_; }
  int64_t sliced_depth() const { return facts_.K_s; }  // K_s (M12); 0 without a MatMul
  const std::vector<int>& nonephemeral_outputs() const { return nonephemeral_; }
  int64_t grid_rows() const { return nrows_; }
  int64_t grid_cols() const { return ncols_; }
  int64_t k_steps() const { return nk_; }
  int64_t num_steps() const;  // tiles x nk, saturated at INT64_MAX
  int64_t tile_of_position(int64_t position) const { return order_.empty() ? position : order_[position]; }
  // External inputs with the first op (declared order) that reads each (for M15 messages).
  const std::vector<std::pair<int, int>>& external_inputs() const { return external_inputs_; }
  const std::vector<int>& evicted() const { return evicted_; }    // written to slow memory (M22, M26)
  const std::vector<int>& retained() const { return retained_; }  // R_i, deduplicated
  const std::vector<int>& retained_in() const { return retained_in_; }
  // M20 D: split-K partial sums without a host (counted only while the reduction is split, nk > 1).
  size_t unhosted_accumulators() const { return accumulators_.size(); }
  double capacity() const { return capacity_; }

 private:
  friend class StepWalker;
  friend class StructureCompiler;  // compile_structure's steps, one per rule group
  struct CompiledOp {
    int op;
    bool matmul;
    uint8_t runs_at;
    Form run_form;
    double base;
    int64_t reduction_depth;  // K_o
    bool producer;            // chain head: reduces fully every step
    int streamed = 0;         // head or in-chain op: 1 = columns streamed (LHS link), 2 = rows (RHS link)
  };
  struct SliceForm {
    int tensor;
    Form form;
    uint8_t runs_at;
    bool may_alias;  // another form of the same tensor exists: numeric comparison needed
  };
  struct RegionCheck {  // M17: two demands on an output that are not symbolically identical
    int op, tensor;
    Form a, b;
  };

  struct MatmulDepth {
    int op;
    int64_t depth;  // K_o
  };
  struct PrologueFeed {  // M14: a Pointwise op whose output a MatMul of the subgraph reads directly
    int pointwise, tensor, matmul, position;
    int64_t depth;
  };
  // What the granularity rules need to know of the structure.
  struct StructureFacts {
    std::vector<MatmulDepth> matmuls;  // distinct, declared order
    bool allow_supernative_k = false;
    int64_t K_s = 0;  // M12 sliced reduction depth
    size_t links = 0;
    bool has_middle = false;
    std::vector<PrologueFeed> prologues;
  };

  SubgraphModel() = default;
  static std::vector<MatmulDepth> matmuls_of(const Problem& p, const Graph& graph,
                                             const std::vector<int>& ops);
  static std::optional<RuleViolation> granularity_limits(const Granularity& g,
                                                         const std::vector<MatmulDepth>& matmuls,
                                                         int64_t native_w, int64_t native_h,
                                                         bool allow_supernative_k, int index);
  std::optional<RuleViolation> apply_granularity(const Granularity& g,
                                                 std::optional<std::vector<int64_t>> traversal);
  // [first, last) of tile row `row` and tile column `col` (edge tiles clipped, M10), and of k-step `ks` over
  // a reduction of `extent` (the last step partial, M12): the one place these are computed.
  std::pair<int64_t, int64_t> row_range(int64_t row) const {
    return {row * g_.h, std::min((row + 1) * g_.h, grid_h_)};
  }
  std::pair<int64_t, int64_t> col_range(int64_t col) const {
    return {col * g_.w, std::min((col + 1) * g_.w, grid_w_)};
  }
  std::pair<int64_t, int64_t> k_range(int64_t ks, int64_t extent) const {
    return {ks * k_, std::min(ks * k_ + k_, extent)};
  }
  // Area of the tile at a traversal position, and (raster order) of all tiles before it.
  int64_t tile_area_at(int64_t position) const {
    const int64_t tile = tile_of_position(position);
    const auto [r0, r1] = row_range(tile / ncols_);
    const auto [c0, c1] = col_range(tile % ncols_);
    return (r1 - r0) * (c1 - c0);
  }
  int64_t finished_before(int64_t position) const;
  // The first failing step of the tile at `position`, given the area finished before it.
  SubgraphResult violation_in_tile(int64_t position, int64_t finished, Violations violations) const;
  // evaluate_fast's parts: the tiles it looks at (each standing for a group of tiles of one class), the first
  // tile of a raster group at which a retained output outgrows the capacity (-1: none), and the summary of
  // such a failure for a search.
  struct TileGroup;
  void tile_groups(std::vector<TileGroup>& groups) const;
  int64_t first_tile_over_capacity(const TileGroup& group, int64_t class_peak) const;
  RuleViolation retained_growth_violation(int64_t failed_at) const;
  SubgraphResult walk_within(int64_t walk_budget) const;  // simulate(), or refused beyond the budget
  // The ranges an axis takes over all steps at the current granularity.
  std::vector<std::pair<int64_t, int64_t>> axis_ranges(const Axis& a) const;
  double last_k_step_elements_max(int64_t last_k) const;  // last_k_steps' traffic part
  // Whether two slice forms of one tensor may give the same region at some steps (then slices are compared
  // numerically and tiles of one class can differ).
  bool aliased_forms_can_coincide() const;

  int index_ = 0;
  std::vector<int> ops_;
  Granularity g_;
  int64_t grid_w_ = 0, grid_h_ = 0, nrows_ = 0, ncols_ = 0, nk_ = 1, k_ = 1;
  std::vector<int64_t> order_;  // empty = raster
  static std::optional<std::string> traversal_error(const std::vector<int64_t>& order, int64_t rows,
                                                    int64_t cols);
  StructureFacts facts_;
  std::vector<CompiledOp> compiled_;
  std::vector<SliceForm> forms_;
  std::vector<RegionCheck> checks_;
  std::vector<int> evicted_, retained_, retained_in_, nonephemeral_;
  std::vector<int> accumulators_;  // M20 D: output tensors of the MatMuls whose partial sum has no host
  std::vector<std::pair<int, int>> external_inputs_;
  std::vector<Region> retained_in_regions_;  // whole tensors (M20 A)
  int64_t retained_in_elements_ = 0;
  double capacity_ = 0, bandwidth_ = 0;
  int64_t native_w_ = 1, native_h_ = 1;
  MatmulCompute compute_model_ = MatmulCompute::FullK;
  bool aliasing_ = false;
  bool aliased_once_ = false;  // count_each_tensors_largest_form_only
};

// Walks a compiled subgraph's steps in order, keeping the previous step's slice set for reuse (M21).
class StepWalker {
 public:
  explicit StepWalker(const SubgraphModel& model);
  bool done() const { return position_ >= model_.tiles(); }
  // Evaluates the next step. Fills `detail` if given. Returns false (and sets violation()) on M17 or M20.
  bool advance(StepDetail* detail = nullptr);
  double last_latency() const { return last_latency_; }
  int64_t last_working_set() const { return last_ws_; }
  double last_compute() const { return last_compute_; }
  double last_memory_time() const { return last_memory_; }
  const std::optional<RuleViolation>& violation() const { return violation_; }
  StepRef next_step() const;

 private:
  friend class SubgraphModel;
  struct NumSlice {
    int tensor;
    Region region;
    int form;
  };
  struct Coord {
    int64_t position, tile, ks;
    Region tile_region;
  };
  // The one evaluation of a step: regions (M17), slices (M19), loads (M21), stores (M22), compute (M23-M24),
  // working set (M20) and latency (M25). `prev` is the previous step's slice set; `cur` receives this step's.
  bool evaluate(const Coord& c, const std::vector<NumSlice>& prev, std::vector<NumSlice>& cur,
                int64_t finished_area, StepDetail* detail);
  Coord coord(int64_t position, int64_t ks) const;
  Region numeric(const Form& f, const Coord& c) const;
  // evaluate's parts: M17's numeric checks (false and violation_ set on a mismatch), the compute time of the
  // ops active at this step (M23, M24), and the working set's terms (M20 A-D) for a report.
  // Forced inline: they run once per step of every walk and every tile class (a call each cost the walk
  // 10 %).
  [[gnu::always_inline]] inline bool regions_agree(const Coord& c);
  [[gnu::always_inline]] inline double compute_time(const Coord& c, uint8_t active, StepDetail* detail) const;
  void add_terms(WorkingSet& ws, const std::vector<NumSlice>& cur, const Coord& c,
                 int64_t finished_area) const;

  const SubgraphModel& model_;
  int64_t position_ = 0, ks_ = 0;
  int64_t finished_area_ = 0;  // area of tiles finished so far (retained outputs grow by it, M20 C)
  std::vector<NumSlice> prev_, cur_;
  double last_latency_ = 0, last_compute_ = 0, last_memory_ = 0;
  int64_t last_ws_ = 0;
  std::optional<RuleViolation> violation_;
  bool summarize_oom_ = false;  // an OOM's violation carries the totals only, not each term (search use)
};

}  // namespace mlsys
