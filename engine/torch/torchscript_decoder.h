// A TorchScript decoder: a user's own generative model, loaded from a file
// whose forward follows the step contract (docs/models.md, "TorchScript
// decoders"):
//
//   forward(input_ids: Tensor, attention_mask: Tensor,
//           past_key_values: Optional[Tensor]) -> Tuple[Tensor, Tensor]
//     input_ids        Long [B, T]: the tokens appended now, LEFT-padded (0 on padding)
//     attention_mask   Bool [B, P + T]: True on real tokens, over the P cached
//                      columns and then the T new ones (each part left-padded)
//     past_key_values  None on a first step, else Float [layers, 2, B, heads, P,
//                      head_dim]: the `present` the model returned before,
//                      as the engine re-batches it
//     returns (logits, present)
//       logits   [B, T, vocab] (or [B, vocab]: the last column's): the next
//                token is the argmax of the last column
//       present  [layers, 2, B, heads, P + T, head_dim]: past with the new
//                tokens' keys and values appended
//   The model takes positions from the mask (cumsum(mask) - 1) and attends
//   causally over columns, never to a key whose mask is False.
//
// The engine keeps each sequence's own columns of `present` between steps,
// so Backend::run generates greedily (one prefill, then one step per token,
// finished requests leaving the batch) and steps() gives the iteration-level
// StepModel, joins and leaves between steps. Each step re-batches the
// sequences' caches into one padded `past` (a copy per step: the price of a
// contract a plain TorchScript model can follow).
//
// Internal to engine/torch/ (includes torch/script.h).
#pragma once

#include "torch_backend.h"

#include <torch/script.h>

namespace bp {

// True when `schema` is the decoder contract's forward.
bool isDecoderSchema(const c10::FunctionSchema &schema);

// Checks the contract on probe steps (two sequences, then one more step on
// their cache) and builds the backend. `info` carries the name, the limits
// (vocabSize, maxSequenceLength = the model's positions) and the parameters.
// InvalidArgument naming the path when the model does not follow the contract.
Result<std::shared_ptr<Backend>> makeTorchScriptDecoder(torch::jit::Module module, ModelInfo info,
                                                        const TorchPlacement &placement);

} // namespace bp
