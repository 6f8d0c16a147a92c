// The "model" of a Hugging Face tokenizer.json of the BPE kind: its
// vocabulary, its merges by rank, and how one pre-tokenized piece becomes
// ids. Two alphabets:
//   byte-level     every byte of the piece is first a character of GPT-2's
//                  byte alphabet (printable bytes themselves, the rest from
//                  U+0100 on), so no character is unknown
//   SentencePiece  the piece's own characters ("▁" for spaces, written by the
//   style          normalizer or Metaspace); with byte_fallback a character
//                  outside the vocabulary becomes its <0xNN> byte tokens, else
//                  the unk token (consecutive ones fused with fuse_unk)
// Merges apply by rank over the whole piece; ignore_merges (Llama 3) takes a
// piece found whole in the vocabulary as it is. Torch-free; immutable after
// parse(), so any thread may encode.
#pragma once

#include "engine/core/request.h"
#include "engine/core/result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace bp::hf {

struct BpeModel {
    std::unordered_map<std::string, TokenId> vocab;
    std::unordered_map<std::string, int> rank; // left + '\0' + right -> merge rank
    bool ignoreMerges = false;
    bool byteLevel = true;     // set by the caller from the pre-tokenizer and decoder
    bool byteFallback = false; // <0xNN> tokens for characters outside the vocabulary
    bool fuseUnk = false;      // consecutive unknown characters as one unk
    std::optional<TokenId> unk;
    std::string spaceMark = "\u2581"; // what a SentencePiece-style decoder turns back into a space
    std::string byteChar[256];        // GPT-2's byte -> character
    std::unordered_map<std::uint32_t, unsigned char> charByte;

    // tokenizer.json's "model": InvalidArgument naming `file` for another
    // model type (WordPiece, Unigram), a subword prefix or word suffix, or a
    // merge that is not two symbols.
    static Status parse(const nlohmann::json &model, const std::string &file, BpeModel &out);
    // The ids of one pre-tokenized piece, appended to `out`.
    void encode(const std::string &piece, std::vector<TokenId> &out) const;
    // The bytes a vocabulary token stands for: byte-level characters mapped
    // back; SentencePiece-style <0xNN> as its byte and the space mark as " ".
    std::string bytesOf(const std::string &token) const;
};

} // namespace bp::hf
