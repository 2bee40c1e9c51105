// Model outputs that are not finite. A checkpoint whose weights hold NaN or inf (saved by a run
// that diverged, or damaged) gives NaN logits, and an argmax over NaN picks class 0: `loom eval`
// reported accuracy 0.0 and `loom predict` the probability "nan", both with exit 0. Here such
// outputs become an error naming the checkpoint (`loom predict`, `loom eval`) or, in an
// evaluation during training, metrics withheld (null) with the count of batches that had them.
//
// Evaluation looks at each batch's loss: every labelled output (logit rows, masked positions,
// span logits) enters it, so a non-finite output that could change a metric makes it non-finite.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace loom::host {

/// A model gave NaN or infinite outputs; the message names the checkpoint (exit 1).
class NonFiniteOutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The index of the first value that is NaN or ±inf, if any.
std::optional<size_t> first_nonfinite(std::span<const float> values);

/// Throws NonFiniteOutputError when any of `values` (rows of `row_width` outputs named `output`,
/// e.g. "logits") is not finite: "<checkpoint>: the model's logits are not finite (nan in
/// <rows(row)>) ...". `rows` describes a row by its index in `values`, as the caller's input names it.
void require_finite_outputs(std::span<const float> values, size_t row_width, const std::string& output,
                            const std::string& checkpoint, const std::function<std::string(size_t)>& rows);

/// An evaluation's metrics when `nonfinite_batches` of its batches had a non-finite loss: every
/// metric becomes null (no number is better than a wrong one) and "eval_nonfinite_batches" says how
/// many; the counts (eval_examples, eval_batches, eval_masked_tokens) stay. Nothing changes at 0.
void withhold_nonfinite_metrics(nlohmann::json& metrics, uint64_t nonfinite_batches);

/// `loom eval`: throws NonFiniteOutputError naming `checkpoint` when `metrics` were withheld.
void refuse_nonfinite_evaluation(const nlohmann::json& metrics, const std::string& checkpoint);

}  // namespace loom::host
