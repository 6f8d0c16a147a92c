// A TorchScript model from a file (the model name is its path).
//
// Contract of the file (docs/models.md):
//   forward(input_ids: Tensor, attention_mask: Tensor) -> Tensor
//     input_ids       Long [B, L], token ids, 0 on padding
//     attention_mask  Bool [B, L], True on real tokens
//     result          [B, ...]: row i is request i's output. A floating
//                     result becomes SequenceResult::values (row flattened),
//                     an integral one SequenceResult::tokens.
//   Optional integer attributes `vocab_size` (default 256) and
//   `max_sequence_length` (default 1024) set what the engine admits.
// Batches are LEFT-padded (as the built-ins are): the model must take its
// positions and its attention from the mask, never assume padding on the right.
//
// Loading checks, each a clear Status naming the path:
//   missing file -> NotFound; unreadable (permissions, a directory) -> NotFound /
//   InvalidArgument; not a TorchScript archive -> InvalidArgument; no forward,
//   or a forward with another signature (checked on its schema before the
//   model is accepted) -> InvalidArgument; a forward that fails on a 2x2 probe
//   batch or returns a tensor whose first dimension is not the batch ->
//   InvalidArgument.
//
// Torch-free header; torchscript_backend.cpp includes torch/script.h.
#pragma once

#include "engine/backend.h"
#include "engine/model_registry.h"

namespace bp {

// True for names createBackend() treats as files: ending in ".pt" or
// containing '/'.
bool looksLikeModelFile(const std::string &name);

Result<std::shared_ptr<Backend>> loadTorchScriptModel(const ModelSpec &spec);

} // namespace bp
