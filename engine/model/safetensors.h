// A safetensors checkpoint read in place: the files are memory-mapped and a
// tensor is a pointer into the mapping with its dtype and shape
// (https://huggingface.co/docs/safetensors: 8 bytes of little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}}, the data).
// A model folder holds one `model.safetensors` or several shards named by
// `model.safetensors.index.json` ("weight_map": name -> file).
//
// Torch-free: engine/torch/ wraps each tensor with at::from_blob and copies
// it once, straight into the dtype and device asked for.
//
// Every malformed input is a clear Status naming the file: a header longer
// than the file, offsets outside the data, a shape whose size does not match
// the offsets, an unknown dtype, a tensor named twice.
#pragma once

#include "engine/core/result.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace bp {

struct SafetensorsTensor {
    std::string dtype;                // "F32", "BF16", "F16", "F64", "I64", ...
    std::vector<std::int64_t> shape;
    const void *data = nullptr;       // into the file's mapping (valid while the checkpoint lives)
    std::size_t bytes = 0;
    std::string file;                 // which file holds it
    std::int64_t elements() const;
};

// Bytes of one element of a safetensors dtype; 0 for an unknown one.
std::size_t safetensorsElementSize(const std::string &dtype);

class SafetensorsCheckpoint {
public:
    // Maps `folder`/model.safetensors, or every shard the index names.
    static Result<std::shared_ptr<SafetensorsCheckpoint>> openFolder(const std::string &folder);
    // Maps one file.
    static Result<std::shared_ptr<SafetensorsCheckpoint>> openFile(const std::string &path);
    ~SafetensorsCheckpoint();
    SafetensorsCheckpoint(const SafetensorsCheckpoint &) = delete;
    SafetensorsCheckpoint &operator=(const SafetensorsCheckpoint &) = delete;

    const std::map<std::string, SafetensorsTensor> &tensors() const { return m_tensors; }
    // NotFound naming the tensor and the folder.
    Result<const SafetensorsTensor *> find(const std::string &name) const;
    std::size_t totalBytes() const;

private:
    SafetensorsCheckpoint() = default;
    Status mapFile(const std::string &path);

    struct Mapping {
        void *address = nullptr;
        std::size_t length = 0;
    };
    std::vector<Mapping> m_mappings;
    std::map<std::string, SafetensorsTensor> m_tensors;
    std::string m_where;
};

} // namespace bp
