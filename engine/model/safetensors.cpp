#include "safetensors.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bp {

std::int64_t SafetensorsTensor::elements() const
{
    std::int64_t n = 1;
    for (std::int64_t d : shape)
        n *= d;
    return n;
}

std::size_t safetensorsElementSize(const std::string &dtype)
{
    if (dtype == "F64" || dtype == "I64" || dtype == "U64")
        return 8;
    if (dtype == "F32" || dtype == "I32" || dtype == "U32")
        return 4;
    if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16")
        return 2;
    if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2")
        return 1;
    return 0;
}

Result<std::shared_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::openFile(const std::string &path)
{
    std::shared_ptr<SafetensorsCheckpoint> c(new SafetensorsCheckpoint());
    c->m_where = path;
    if (Status s = c->mapFile(path); !s)
        return s;
    return c;
}

Result<std::shared_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::openFolder(const std::string &folder)
{
    namespace fs = std::filesystem;
    std::shared_ptr<SafetensorsCheckpoint> c(new SafetensorsCheckpoint());
    c->m_where = folder;
    const fs::path dir(folder);
    const fs::path index = dir / "model.safetensors.index.json";
    std::error_code ec;
    if (fs::exists(index, ec)) {
        std::ifstream in(index);
        const auto j = nlohmann::json::parse(in, nullptr, false);
        if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object())
            return Status(StatusCode::InvalidArgument,
                          index.string() + ": not a safetensors index (no \"weight_map\" object)");
        std::set<std::string> files;
        for (const auto &[name, file] : j["weight_map"].items()) {
            if (!file.is_string())
                return Status(StatusCode::InvalidArgument, index.string() + ": weight_map[\"" + name +
                                                               "\"] is not a file name");
            const std::string f = file.get<std::string>();
            if (f.find('/') != std::string::npos || f.find("..") != std::string::npos)
                return Status(StatusCode::InvalidArgument, index.string() + ": shard \"" + f +
                                                               "\" is not a file of the folder");
            files.insert(f);
        }
        for (const std::string &f : files)
            if (Status s = c->mapFile((dir / f).string()); !s)
                return s;
        for (const auto &[name, file] : j["weight_map"].items()) {
            const auto it = c->m_tensors.find(name);
            if (it == c->m_tensors.end() || fs::path(it->second.file).filename() != file.get<std::string>())
                return Status(StatusCode::InvalidArgument, index.string() + ": tensor \"" + name +
                                                               "\" is not in shard " + file.get<std::string>());
        }
        return c;
    }
    const fs::path single = dir / "model.safetensors";
    if (!fs::exists(single, ec))
        return Status(StatusCode::NotFound, folder + ": no model.safetensors and no model.safetensors.index.json");
    if (Status s = c->mapFile(single.string()); !s)
        return s;
    return c;
}

Status SafetensorsCheckpoint::mapFile(const std::string &path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return Status(StatusCode::NotFound, path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return Status(StatusCode::InvalidArgument, path + ": not a regular file");
    }
    const auto size = std::size_t(st.st_size);
    if (size < 8) {
        ::close(fd);
        return Status(StatusCode::InvalidArgument, path + ": too short for a safetensors file");
    }
    void *address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (address == MAP_FAILED)
        return Status(StatusCode::InvalidArgument, path + ": cannot map it: " + std::strerror(errno));
    m_mappings.push_back({address, size});
    const auto *bytes = static_cast<const unsigned char *>(address);
    std::uint64_t headerLength = 0;
    for (int i = 7; i >= 0; --i)
        headerLength = (headerLength << 8) | bytes[i];
    if (headerLength > size - 8)
        return Status(StatusCode::InvalidArgument, path + ": header of " + std::to_string(headerLength) +
                                                       " bytes is longer than the file");
    const auto header = nlohmann::json::parse(bytes + 8, bytes + 8 + headerLength, nullptr, false);
    if (header.is_discarded() || !header.is_object())
        return Status(StatusCode::InvalidArgument, path + ": the header is not a JSON object");
    const std::size_t dataStart = 8 + headerLength, dataBytes = size - dataStart;
    for (const auto &[name, entry] : header.items()) {
        if (name == "__metadata__")
            continue;
        if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
            !entry.contains("data_offsets"))
            return Status(StatusCode::InvalidArgument, path + ": tensor \"" + name +
                                                           "\" lacks dtype, shape or data_offsets");
        SafetensorsTensor t;
        t.file = path;
        try {
            t.dtype = entry["dtype"].get<std::string>();
            t.shape = entry["shape"].get<std::vector<std::int64_t>>();
            const auto offsets = entry["data_offsets"].get<std::vector<std::uint64_t>>();
            if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > dataBytes)
                return Status(StatusCode::InvalidArgument,
                              path + ": tensor \"" + name + "\" has data offsets outside the file");
            t.data = bytes + dataStart + offsets[0];
            t.bytes = std::size_t(offsets[1] - offsets[0]);
        } catch (const nlohmann::json::exception &e) {
            return Status(StatusCode::InvalidArgument, path + ": tensor \"" + name + "\": " + e.what());
        }
        const std::size_t element = safetensorsElementSize(t.dtype);
        if (element == 0)
            return Status(StatusCode::InvalidArgument,
                          path + ": tensor \"" + name + "\" has an unknown dtype \"" + t.dtype + "\"");
        for (std::int64_t d : t.shape)
            if (d < 0)
                return Status(StatusCode::InvalidArgument, path + ": tensor \"" + name + "\" has a negative size");
        if (std::size_t(t.elements()) * element != t.bytes)
            return Status(StatusCode::InvalidArgument,
                          path + ": tensor \"" + name + "\" holds " + std::to_string(t.bytes) +
                              " bytes, its shape needs " + std::to_string(std::size_t(t.elements()) * element));
        if (!m_tensors.emplace(name, std::move(t)).second)
            return Status(StatusCode::InvalidArgument, path + ": tensor \"" + name + "\" appears twice");
    }
    return Status::ok();
}

SafetensorsCheckpoint::~SafetensorsCheckpoint()
{
    for (const Mapping &m : m_mappings)
        ::munmap(m.address, m.length);
}

Result<const SafetensorsTensor *> SafetensorsCheckpoint::find(const std::string &name) const
{
    const auto it = m_tensors.find(name);
    if (it == m_tensors.end())
        return Status(StatusCode::NotFound, m_where + ": the checkpoint has no tensor \"" + name + "\"");
    return &it->second;
}

std::size_t SafetensorsCheckpoint::totalBytes() const
{
    std::size_t n = 0;
    for (const auto &[name, t] : m_tensors)
        n += t.bytes;
    return n;
}

} // namespace bp
