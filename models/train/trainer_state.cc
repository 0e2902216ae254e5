// SPDX-License-Identifier: Apache-2.0
// Trainer: checkpoints and resume. Rank 0 writes and reads the checkpoint; on resume it
// broadcasts the outcome, the position and every tensor, so the other ranks need no
// access to its disk.
#include "common/error.h"
#include "train/model_state.h"
#include "train/trainer.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace dt::models {
namespace {

enum ResumeStatus : int32_t { kFresh = 0, kRestored = 1, kRefused = 2 };

// Values that are not finite in the model's entries ("model/...", float32) of st.
int64_t nonfinite_model_values(const CheckpointState &st)
{
    int64_t n = 0;
    for (const auto &[name, bytes] : st.entries()) {
        if (name.rfind("model/", 0) != 0)
            continue;
        for (size_t i = 0; i + sizeof(float) <= bytes.size(); i += sizeof(float)) {
            float v;
            std::memcpy(&v, bytes.data() + i, sizeof v);
            n += !std::isfinite(v);
        }
    }
    return n;
}

// What a resumed run says when its checkpoint has done the --epochs it asks for.
std::string finished_run(const Position &pos, const TrainOptions &o)
{
    const std::string steps =
        pos.step == 0 ? "" : cat(" and ", pos.step, " steps of epoch ", pos.epoch + 1);
    const std::string of = pos.epoch == o.epochs && pos.step == 0
                               ? cat(" of ", o.epochs)
                               : cat(steps, ", past --epochs ", o.epochs);
    return cat("the checkpoint in ", o.checkpoint_dir, " has finished epoch ", pos.epoch, of,
               "; nothing to train: raise --epochs to go on");
}

} // namespace

std::array<double, 8> pack_position(const Position &p)
{
    return {double(p.epoch), double(p.step), double(p.global_step), p.loss_sum,
            p.correct,       p.seen,         p.elapsed,             p.epoch_time};
}

Position unpack_position(const std::array<double, 8> &v)
{
    return {uint64_t(v[0]), uint64_t(v[1]), uint64_t(v[2]), v[3], v[4], v[5], v[6], v[7]};
}

void Trainer::save(bool end_of_epoch)
{
    // pos_ was folded across ranks just before, so every rank sees the same sum and takes
    // the same branch, at no cost; a nan or inf on any rank makes it nan or inf on all.
    // (At an epoch's end train_epoch checked the epoch's losses before pos_ was reset.)
    if (!end_of_epoch && !std::isfinite(pos_.loss_sum))
        diverged(pos_.epoch + 1, cat("the mean training loss of its first ", pos_.step,
                                     " steps is ", pos_.loss_sum / pos_.seen));
    // Running statistics differ per rank; their average is what the model means (and,
    // the update being linear, averaging now or later gives the same numbers).
    if (!end_of_epoch)
        dist_.average(buffer_tensors(model_), "bn/");
    // The losses lag the parameters by one update: a step whose loss was finite can leave
    // them nan or inf. Rank 0 copies them to the host to write them anyway, so it counts
    // what is not finite there and tells the others (one number per checkpoint), rather
    // than every rank copying its own model.
    CheckpointState st;
    int64_t nonfinite = 0;
    if (dist_.rank() == 0) {
        save_model(c_, model_, st);
        nonfinite = nonfinite_model_values(st);
    }
    dist_.broadcast_raw(&nonfinite, 1, DT_INT64, "checkpoint/nonfinite");
    if (nonfinite != 0)
        diverged(end_of_epoch ? pos_.epoch : pos_.epoch + 1,
                 cat(end_of_epoch ? std::string("at its end") : cat("after step ", pos_.step),
                     ", ", nonfinite, " values of the parameters and buffers are not finite"));
    if (dist_.rank() != 0)
        return;
    optimizer_.save(st);
    Position p = pos_;
    p.elapsed = pos_.elapsed + seconds_since_start();
    const auto v = pack_position(p);
    st.put<double>("train/position", std::span<const double>(v));
    st.put_u64("config/global_batch", sampler_.global_batch());
    st.put_u64("config/seed", o_.seed);
    st.put_u64("config/train_size", train_.size());
    write_checkpoint(o_.checkpoint_dir, st);
}

void Trainer::meet_after_messages(const char *name)
{
    int32_t said = 1;
    dist_.broadcast_raw(&said, 1, DT_INT32, name);
}

void Trainer::diverged(uint64_t epoch, const std::string &what)
{
    const std::string kept =
        o_.checkpoint_dir.empty()
            ? std::string("stopped")
            : cat("nothing was saved: the checkpoint in ", o_.checkpoint_dir,
                  ", if any, is left as it was");
    const std::string reason =
        cat("training diverged in epoch ", epoch, ": ", what, "; ", kept, ". Lower --lr (",
            o_.lr, " here)", o_.bf16 ? " or train without --bf16" : "",
            o_.warmup_epochs == 0 ? ", or warm up with --warmup-epochs" : "");
    // Rank 0 says why before any rank may stop, as for a refused checkpoint: a rank that
    // exits first makes the launcher stop the rest, which could cut the message short.
    if (dist_.rank() == 0) {
        std::fprintf(stderr, "disttrain-train: error: %s\n", reason.c_str());
        std::fflush(stderr);
    }
    meet_after_messages("diverged/reported");
    if (dist_.rank() == 0)
        throw ReportedError(reason);
    throw std::runtime_error(cat("training diverged in epoch ", epoch, " (see rank 0's "
                                 "message)"));
}

void Trainer::check_same_settings()
{
    if (dist_.size() == 1)
        return;
    const SharedSettings mine = shared_settings(o_, train_.size(), test_.size());
    // Rank 0's settings everywhere: their length, then the text.
    std::string text = encode_settings(mine);
    int64_t length = int64_t(text.size());
    dist_.broadcast_raw(&length, 1, DT_INT64, "settings/length");
    text.resize(size_t(length));
    dist_.broadcast_raw(text.data(), text.size(), DT_UINT8, "settings/text");
    const SharedSettings rank0 = decode_settings(text);
    const std::vector<size_t> differ = differing_settings(mine, rank0);
    // How many ranks differ from rank 0 in each setting, known to every rank.
    std::vector<double> counts(rank0.size(), 0.0);
    for (size_t i : differ)
        counts[i] = 1;
    dist_.sum(counts, "settings/differ");
    std::string which;
    for (size_t i = 0; i < counts.size(); ++i)
        if (counts[i] > 0)
            which += cat(which.empty() ? "" : ", ", rank0[i].first, " (", counts[i],
                         " rank(s))");
    if (which.empty())
        return;
    // Each rank says its part before any may stop (the launcher then stops the others).
    for (size_t i : differ) {
        std::string theirs = "no such setting";
        for (const auto &[name, value] : mine)
            if (name == rank0[i].first)
                theirs = value;
        std::fprintf(stderr, "disttrain-train: rank %d has %s = %s where rank 0 has %s\n",
                     dist_.rank(), rank0[i].first.c_str(), theirs.c_str(),
                     rank0[i].second.c_str());
    }
    const std::string reason = cat("the ranks were started with other settings than rank "
                                   "0's: ", which, "; start every rank with the same options "
                                   "and data");
    if (dist_.rank() == 0)
        std::fprintf(stderr, "disttrain-train: %s\n", reason.c_str());
    std::fflush(stderr);
    meet_after_messages("settings/refusal-reported");
    throw ReportedInputError(reason);
}

void Trainer::restore_or_broadcast()
{
    int32_t status = kFresh;
    std::string refused;
    std::array<double, 8> position = pack_position(pos_);
    if (dist_.rank() == 0 && !o_.checkpoint_dir.empty()) {
        try {
            // Before the first step, not at the first checkpoint (an epoch or more later).
            check_checkpoint_folder(o_.checkpoint_dir);
            CheckpointState st;
            if (o_.resume && read_checkpoint(o_.checkpoint_dir, st)) {
                auto expect = [&](const char *key, uint64_t mine, const char *how) {
                    const uint64_t theirs = st.get_u64(key);
                    if (theirs != mine)
                        throw_input_error("the checkpoint in ", o_.checkpoint_dir, " has ",
                                          key, " = ", theirs, " but this run has ", mine,
                                          "; ", how);
                };
                expect("config/global_batch", sampler_.global_batch(),
                       "resume with the same --batch-size x number of ranks");
                expect("config/seed", o_.seed, "resume with the same --seed");
                expect("config/train_size", train_.size(),
                       "resume with the same data and --train-limit");
                load_model(c_, model_, st);
                optimizer_.load(st);
                st.get_into("train/position", position.data(), position.size() * 8);
                status = kRestored;
            } else if (o_.resume) {
                std::fprintf(stderr, "disttrain-train: no checkpoint in %s yet; starting "
                                     "from the beginning\n",
                             o_.checkpoint_dir.c_str());
            }
        } catch (const InputError &e) {
            refused = e.what();
            status = kRefused;
        }
    }
    dist_.broadcast_raw(&status, 1, DT_INT32, "resume/status");
    if (status == kRefused) {
        // Rank 0 prints its reason before the others may stop: a rank that exits first
        // makes the launcher stop the rest, which could cut rank 0 short of its message.
        if (dist_.rank() == 0) {
            std::fprintf(stderr, "disttrain-train: %s\n", refused.c_str());
            std::fflush(stderr);
        }
        meet_after_messages("resume/refusal-reported");
        if (dist_.rank() == 0)
            throw ReportedInputError(refused);
        throw InputError("rank 0 refused its --checkpoint-dir or the checkpoint there (see "
                         "its message)");
    }
    // Rank 0's tensors everywhere: a fresh model (same seed, but this makes it certain)
    // or the restored one with its optimizer state.
    dist_.broadcast(model_tensors(model_), "init/model/");
    if (status == kRestored) {
        dist_.broadcast(optimizer_.state(), "init/optimizer/");
        dist_.broadcast_raw(position.data(), position.size(), DT_FLOAT64, "resume/position");
        pos_ = unpack_position(position);
        optimizer_.set_steps(int64_t(pos_.global_step));
        if (dist_.rank() == 0 && pos_.epoch >= o_.epochs)
            std::fprintf(stderr, "disttrain-train: %s\n", finished_run(pos_, o_).c_str());
        else if (dist_.rank() == 0)
            std::fprintf(stderr, "disttrain-train: resumed from %s at epoch %llu, step %llu\n",
                         checkpoint_path(o_.checkpoint_dir).c_str(),
                         static_cast<unsigned long long>(pos_.epoch + 1),
                         static_cast<unsigned long long>(pos_.step));
    }
}

} // namespace dt::models
