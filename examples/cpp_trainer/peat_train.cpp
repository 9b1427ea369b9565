// peat_train — pretrains a small CNN or MLP on the procedural shapes set, saves a
// checkpoint, replaces the head and finetunes on a shifted label set. Prints loss
// and accuracy per epoch. Every GEMM goes through one GemmDispatcher: the golden
// Eigen GEMM, or a candidate kernel ("libx.so:symbol") for the ops selected.
// With --trace or --fi-candidate, PEAT attaches at the seam (PeatDispatcher):
// sampled calls, scalars and the checkpoint go into a trace; runtime FI runs a
// peat_kernel_fn candidate on every N-th call of the ops a glob selects.
#include "peat_trainer/checkpoint.hpp"
#include "peat_trainer/peat_dispatcher.hpp"
#include "peat_trainer/trainer.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>

#include <sys/resource.h>
#include <memory>
#include <stdexcept>

using namespace peat_trainer;

namespace {

// CPU seconds of the calling thread, and of the whole process (all threads):
// unlike wall time, neither grows when other programs take the cores, so
// benchmarks/trainer compares them too.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"peat_train: the PEAT example trainer (pretrain, checkpoint, finetune)"};
  std::string model_kind = "cnn", optimizer = "adam", checkpoint = "peat_train.ckpt", candidate, candidate_ops, steps_csv;
  int epochs = 4, finetune_epochs = 2, batch = 64, threads = 1, shift = 3;
  int64_t train_size = 8000, test_size = 2000, finetune_size = 4000;
  float lr = 2e-3f, finetune_lr = 3e-3f, noise = 0.35f;
  uint64_t seed = 1, order_seed = 0;
  app.add_option("--model", model_kind, "cnn or mlp")->check(CLI::IsMember({"cnn", "mlp"}));
  app.add_option("--optimizer", optimizer, "adam or sgd (momentum 0.9)")->check(CLI::IsMember({"adam", "sgd"}));
  app.add_option("--epochs", epochs, "pretraining epochs")->check(CLI::NonNegativeNumber);
  app.add_option("--finetune-epochs", finetune_epochs, "finetuning epochs (0: skip finetuning)")->check(CLI::NonNegativeNumber);
  app.add_option("--batch", batch, "mini-batch size")->check(CLI::PositiveNumber);
  app.add_option("--lr", lr, "peak learning rate of pretraining (cosine decay)");
  app.add_option("--finetune-lr", finetune_lr, "peak learning rate of finetuning");
  app.add_option("--train-size", train_size, "pretraining images")->check(CLI::PositiveNumber);
  app.add_option("--test-size", test_size, "test images")->check(CLI::PositiveNumber);
  app.add_option("--finetune-size", finetune_size, "finetuning images")->check(CLI::PositiveNumber);
  app.add_option("--noise", noise, "pixel noise standard deviation");
  app.add_option("--shift", shift, "finetuning labels are (label + shift) mod 10");
  app.add_option("--seed", seed, "seed of data, initialisation and batch order");
  app.add_option("--order-seed", order_seed, "seed of the batch order only (default: --seed); another value gives a run-to-run noise band");
  app.add_option("--threads", threads, "threads of the golden GEMM (rows split; same bits for any count on these shapes)")->check(CLI::PositiveNumber);
  app.add_option("--checkpoint", checkpoint, "where the pretrained checkpoint is written");
  app.add_option("--candidate", candidate, "run a candidate GEMM 'path/libx.so:symbol' instead of the golden one");
  app.add_option("--candidate-ops", candidate_ops, "only for ops whose name contains this (default: all ops)");
  app.add_option("--steps-csv", steps_csv, "write the per-step scalars (stage,step,epoch,loss,accuracy,lr) to this CSV file");
  PeatOptions peat;
  app.add_option("--trace", peat.trace, "attach PEAT and record a trace (sampled GEMM calls, losses, the checkpoint) to this file");
  app.add_option("--record-every", peat.record_every, "record every N-th call of each GEMM op")->check(CLI::PositiveNumber);
  app.add_option("--fi-candidate", peat.fi_candidate, "runtime FI: run this peat_kernel_fn 'libx.so:symbol' (e.g. libpeat_candidates.so:peat_cand_bf16_kernel)");
  app.add_option("--fi-every", peat.fi_every, "runtime FI on every N-th call of each selected op")->check(CLI::PositiveNumber);
  app.add_option("--fi-ops", peat.fi_ops, "glob over op names runtime FI applies to");
  bool attach_idle = false;
  app.add_flag("--attach", attach_idle, "attach PEAT even without --trace/--fi-candidate (every GEMM through the injector, nothing fires)");
  CLI11_PARSE(app, argc, argv);
  const bool attach = attach_idle || !peat.trace.empty() || !peat.fi_candidate.empty();
  if (attach && !candidate.empty()) {
    std::fprintf(stderr, "peat_train: --candidate and PEAT (--trace/--fi-candidate) are exclusive\n");
    return 2;
  }

  try {
    DataOptions data_opt;
    data_opt.noise = noise;
    const auto t0 = std::chrono::steady_clock::now();
    const Dataset train = make_shapes_dataset(train_size, seed, data_opt);
    const Dataset test = make_shapes_dataset(test_size, seed + 1000003, data_opt);
    const double data_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    auto build = [&](uint64_t s) {
      return model_kind == "cnn" ? make_cnn(16, 1, 16, 32, 64, kShapeClasses, s) : make_mlp(16, 1, 128, kShapeClasses, s);
    };
    auto model = build(seed);
    GoldenGemm golden(threads);
    GemmDispatcher* dispatcher = &golden;
    std::unique_ptr<CandidateDispatcher> cand;
    std::unique_ptr<PeatDispatcher> pd;
    if (attach) {
      peat.seed = seed;
      peat.golden_threads = threads;
      pd = std::make_unique<PeatDispatcher>(peat);
      pd->attach(*model);
      dispatcher = pd.get();
    } else if (!candidate.empty()) {
      const CGemmFn fn = load_c_gemm(candidate);
      cand = std::make_unique<CandidateDispatcher>(
          fn, [candidate_ops](const GemmCall& c) { return candidate_ops.empty() || c.op.find(candidate_ops) != std::string_view::npos; }, &golden);
      dispatcher = cand.get();
    }
    std::printf("peat_train: %s, %lld parameters, %zu GEMM ops, %lld train / %lld test images (generated in %.2f s), %d GEMM thread(s)%s%s\n",
                model_kind.c_str(), static_cast<long long>(model->parameter_count()), model->op_names().size(),
                static_cast<long long>(train.n), static_cast<long long>(test.n), data_s, threads,
                candidate.empty() ? "" : ", candidate ", candidate.c_str());

    Trainer trainer(*model, *dispatcher);
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> csv(nullptr, std::fclose);
    if (!steps_csv.empty()) {
      csv.reset(std::fopen(steps_csv.c_str(), "w"));
      if (!csv) throw std::runtime_error("cannot write " + steps_csv);
      std::fprintf(csv.get(), "stage,step,epoch,loss,accuracy,lr\n");
      trainer.on_step = [&](const StepScalars& s) {
        std::fprintf(csv.get(), "%.*s,%lld,%d,%.9g,%.6g,%.9g\n", static_cast<int>(s.stage.size()), s.stage.data(),
                     static_cast<long long>(s.step), s.epoch + 1, s.loss, s.accuracy, s.lr);
      };
    }
    if (pd) pd->hook(trainer);
    trainer.on_epoch = [&](const EpochResult& e) {
      std::printf("%-8s epoch %d  step %5lld  loss %.4f  acc %.4f  test_loss %.4f  test_acc %.4f  %.2f s\n", e.stage.c_str(), e.epoch + 1,
                  static_cast<long long>(e.steps), e.train_loss, e.train_accuracy, e.test.loss, e.test.accuracy, e.seconds);
      std::fflush(stdout);
    };
    TrainConfig cfg;
    cfg.stage = "pretrain";
    cfg.optimizer = optimizer;
    cfg.epochs = epochs;
    cfg.batch = batch;
    cfg.lr = lr;
    cfg.seed = order_seed != 0 ? order_seed : seed;
    const auto t1 = std::chrono::steady_clock::now();
    const double thread_cpu0 = thread_cpu_seconds(), process_cpu0 = process_cpu_seconds();
    trainer.fit(train, test, cfg);
    save_checkpoint(checkpoint, model->state());
    if (pd) pd->checkpoint("pretrain", trainer.step(), model->state());
    std::printf("checkpoint: %s (%zu tensors)\n", checkpoint.c_str(), model->state().size());

    if (finetune_epochs > 0) {
      // A fresh model restored from the checkpoint, with a new head, on a shifted label set.
      auto tuned = build(seed + 1);
      tuned->load_state(load_checkpoint(checkpoint), {"head."});
      tuned->replace_head(kShapeClasses, seed + 2);
      const Dataset ft_train = shift_labels(make_shapes_dataset(finetune_size, seed + 2000003, data_opt), shift);
      const Dataset ft_test = shift_labels(test, shift);
      trainer.set_model(*tuned);
      if (pd) pd->attach(*tuned);
      const Evaluation before = trainer.evaluate(ft_test);
      std::printf("finetune: labels shifted by %d, new head: test_loss %.4f  test_acc %.4f before finetuning\n", shift, before.loss,
                  before.accuracy);
      TrainConfig ft = cfg;
      ft.stage = "finetune";
      ft.epochs = finetune_epochs;
      ft.lr = finetune_lr;
      ft.seed = cfg.seed + 3;
      trainer.fit(ft_train, ft_test, ft);
      model = std::move(tuned);
    }
    const double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    const double thread_cpu = thread_cpu_seconds() - thread_cpu0, process_cpu = process_cpu_seconds() - process_cpu0;
    const double per_step = trainer.step() ? 1e3 / static_cast<double>(trainer.step()) : 0.0;
    std::printf("done: %lld steps in %.2f s (%.2f ms/step; CPU %.2f ms/step training thread, %.2f ms/step process)",
                static_cast<long long>(trainer.step()), train_s, train_s * per_step, thread_cpu * per_step, process_cpu * per_step);
    if (cand) std::printf(", %lld GEMM calls to the candidate, %lld golden", static_cast<long long>(cand->candidate_calls()),
                          static_cast<long long>(cand->fallback_calls()));
    if (pd) {
      pd->close();
      std::printf(", PEAT: %lld GEMM calls to the candidate, %lld golden, %llu recorded%s%s", static_cast<long long>(pd->candidate_calls()),
                  static_cast<long long>(pd->golden_calls()), static_cast<unsigned long long>(pd->recorded()),
                  peat.trace.empty() ? "" : ", trace ", peat.trace.c_str());
    }
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "peat_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
