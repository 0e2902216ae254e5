/* SPDX-License-Identifier: Apache-2.0 */
// Checkpoints: named blobs (parameters, optimizer state, counters) in one file that is
// written atomically and checked when read.
//
// File layout (little-endian, as written by the host):
//   "DTCKPT\r\n"  u32 format version  u32 entry count  u64 payload bytes
//   payload: per entry  u32 name length, name, u64 data length, data
//   u32 zlib crc32 of everything before it
// The writer fills "<dir>/checkpoint.dtck.tmp", fsyncs it, renames it over
// "<dir>/checkpoint.dtck" and fsyncs the folder, so a crash at any point leaves either
// the previous complete checkpoint or the new one, never a torn file under that name.
// The reader refuses (InputError) a file whose magic, version, lengths or crc is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace dt::models {

class CheckpointState {
public:
    void put_bytes(const std::string &name, const void *data, size_t bytes);
    template <typename T>
    void put(const std::string &name, std::span<const T> values)
    {
        put_bytes(name, values.data(), values.size_bytes());
    }
    void put_u64(const std::string &name, uint64_t v) { put_bytes(name, &v, sizeof v); }
    void put_f64(const std::string &name, double v) { put_bytes(name, &v, sizeof v); }
    void put_string(const std::string &name, const std::string &s)
    {
        put_bytes(name, s.data(), s.size());
    }

    bool has(const std::string &name) const { return entries_.count(name) != 0; }
    // The blob `name`; throws InputError when it is missing.
    const std::vector<uint8_t> &bytes(const std::string &name) const;
    // Copies blob `name` into out, which must have exactly its size (else InputError:
    // the checkpoint belongs to another model or configuration).
    void get_into(const std::string &name, void *out, size_t bytes) const;
    uint64_t get_u64(const std::string &name) const;
    double get_f64(const std::string &name) const;
    std::string get_string(const std::string &name) const;

    const std::map<std::string, std::vector<uint8_t>> &entries() const { return entries_; }

    std::vector<uint8_t> serialize() const;
    // Parses and verifies a serialized checkpoint; `origin` names it in errors.
    static CheckpointState deserialize(std::span<const uint8_t> file,
                                       const std::string &origin);

private:
    std::map<std::string, std::vector<uint8_t>> entries_;
};

// "<dir>/checkpoint.dtck".
std::string checkpoint_path(const std::string &dir);

// Writes state atomically as described above, creating dir if needed. Throws
// std::runtime_error (with the path and errno text) when the disk refuses.
void write_checkpoint(const std::string &dir, const CheckpointState &state);

// Creates dir if needed and refuses (InputError, naming it and the reason) a folder this
// process cannot create files in, so that a run learns before its first step, not at its
// first checkpoint, that it could not save one.
void check_checkpoint_folder(const std::string &dir);

// Reads and verifies "<dir>/checkpoint.dtck". Returns false only when there is none
// (ENOENT); throws InputError, naming the path and the reason, when it cannot be opened
// or read (permissions, a folder or a FIFO in its place, a dangling symbolic link, I/O
// errors) or is corrupt or truncated, so that a run never overwrites a checkpoint it
// could not read.
bool read_checkpoint(const std::string &dir, CheckpointState &out);

} // namespace dt::models
