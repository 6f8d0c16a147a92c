// A TorchScript model from a file (the model name is its path).
//
// Contract of the file (docs/models.md):
//   forward(input_ids: Tensor, attention_mask: Tensor) -> Tensor
//     input_ids       Long [B, L], token ids, 0 on padding
//     attention_mask  Bool [B, L], True on real tokens
//     result          [B, ...]: row i is request i's output. A floating
//                     result becomes SequenceResult::values (row flattened),
//                     an integral one SequenceResult::tokens.
//   What the engine admits (token ids in [0, vocab), at most max length
//   tokens), first found wins:
//     vocab:      ModelSpec::vocabSize (--vocab-size); integer attribute
//                 `vocab_size`; the rows of the token embedding (the first
//                 nn.Embedding, or 2-D "*embed*.weight" parameter, whose name
//                 does not say "pos"). None of them -> InvalidArgument naming
//                 --vocab-size: a guessed vocabulary either rejects valid ids
//                 or lets the model index past its table.
//     max length: ModelSpec::maxSequenceLength (--max-length); integer
//                 attribute `max_sequence_length`; the rows of a
//                 position embedding (an embedding whose name says "pos");
//                 else 1024.
//   An option above what the model's own table holds is InvalidArgument
//   (the ids or positions past it would fail inside forward).
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

#include "engine/model/backend.h"
#include "engine/model/model_registry.h"

namespace bp {

// True for names createBackend() treats as files: ending in ".pt" or
// containing '/'.
bool looksLikeModelFile(const std::string &name);

Result<std::shared_ptr<Backend>> loadTorchScriptModel(const ModelSpec &spec);

} // namespace bp
