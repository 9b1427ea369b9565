// Trains a small CNN (Conv2d -> ReLU -> Linear) on random 8x8 images with the
// aten overrides of libpeat_aten.so, and checks what a framework fork needs:
//   1. attached with a trace, every mm / addmm / convolution call of two
//      training steps (forward and backward) is recorded;
//   2. Playback of that trace with the golden kernel as candidate
//      (libpeat_aten.so:peat_aten_golden) is EXACT for every record;
//   3. attached with runtime FI (a bf16 candidate on every 3rd aten::mm call),
//      the candidate fires exactly on its schedule and training goes on.
// Usage: peat_libtorch_train TRACE CANDIDATE_SO. Exit 0 when every check holds.
#include "peat_aten.hpp"

#include <torch/torch.h>

#include <cstdio>
#include <string>

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

struct Net : torch::nn::Module {
  torch::nn::Conv2d conv{torch::nn::Conv2dOptions(1, 4, 3).padding(1)};
  torch::nn::Linear fc{4 * 8 * 8, 10};
  Net() {
    register_module("conv", conv);
    register_module("fc", fc);
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc(torch::relu(conv(x)).flatten(1)); }
};

double train(Net& net, torch::optim::SGD& opt, int steps, int64_t first_step) {
  double loss_value = 0;
  for (int s = 0; s < steps; ++s) {
    if (peat::session* ps = peat_aten::session()) ps->set_step(first_step + s);
    torch::manual_seed(static_cast<uint64_t>(100 + first_step + s));
    const torch::Tensor x = torch::randn({16, 1, 8, 8});
    const torch::Tensor y = torch::randint(0, 10, {16});
    opt.zero_grad();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(net.forward(x), y);
    loss.backward();
    opt.step();
    loss_value = loss.item<double>();
  }
  return loss_value;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TRACE CANDIDATE_SO\n", argv[0]);
    return 2;
  }
  const std::string trace = argv[1], candidate_so = argv[2];
  torch::manual_seed(0);
  at::set_num_threads(1);
  Net net;
  torch::optim::SGD opt(net.parameters(), torch::optim::SGDOptions(0.05));

  // 1. Record two steps.
  peat_aten::Config rec;
  rec.trace_path = trace;
  peat_aten::attach(rec);
  train(net, opt, 2, 0);
  const uint64_t written = peat_aten::detach();
  peat::trace_reader reader(trace.c_str());
  uint64_t mm = 0, addmm = 0, conv = 0;
  for (uint64_t i = 0; i < reader.record_count(); ++i) {
    const peat_trace_record_info_t info = reader.record_info(i);
    if (info.kind != PEAT_TRACE_KIND_OP) continue;
    const std::string name = info.name;
    mm += name == "aten::mm";
    addmm += name == "aten::addmm";
    conv += name == "aten::convolution";
  }
  std::printf("recorded: %llu records (%llu mm, %llu addmm, %llu convolution)\n",
              static_cast<unsigned long long>(written), static_cast<unsigned long long>(mm),
              static_cast<unsigned long long>(addmm), static_cast<unsigned long long>(conv));
  // Per step: forward addmm and convolution; backward mm for fc's input and weight gradients.
  expect(addmm == 2 && conv == 2 && mm == 4, "two steps record 2 addmm, 2 convolution and 4 mm calls");

  // 2. Same-op replay through the golden kernel.
  peat_playback_options_t po;
  peat_playback_options_init(&po);
  po.attrs_mode = PEAT_PLAYBACK_ATTRS_LIST;
  peat::playback pb(reader, &po);
  pb.set_candidate_symbol("libpeat_aten.so:peat_aten_golden");
  pb.run();
  const peat_playback_summary_t sum = pb.summary();
  std::printf("replay: %llu records, %llu exact, %llu failed\n", static_cast<unsigned long long>(sum.selected),
              static_cast<unsigned long long>(sum.exact), static_cast<unsigned long long>(sum.failed));
  expect(sum.selected == mm + addmm + conv && sum.exact == sum.selected, "same-op replay is EXACT for every record");

  // 3. Runtime FI: the bf16 candidate on aten::mm calls 0, 3, 6 ... (counted per session).
  peat_aten::Config fi;
  fi.candidate = candidate_so + ":mm_bf16";
  fi.candidate_ops = "aten::mm";
  fi.every_n = 3;
  peat_aten::attach(fi);
  const double loss = train(net, opt, 3, 2);
  peat::injector& inj = *peat_aten::injector();
  const uint64_t calls = peat_aten::session()->call_count(peat_aten::session()->intern_op("aten::mm"));
  const uint64_t firings = inj.firing_count();
  bool on_schedule = firings == (calls + 2) / 3;
  for (uint64_t i = 0; i < firings; ++i) {
    const peat_firing_t f = inj.firing(i);
    on_schedule = on_schedule && f.call == 3 * i && f.action == PEAT_ACTION_RUN_CANDIDATE && f.status == PEAT_STATUS_OK;
  }
  std::printf("runtime FI: %llu mm calls, %llu firings, loss %.4f\n", static_cast<unsigned long long>(calls),
              static_cast<unsigned long long>(firings), loss);
  expect(calls == 6 && on_schedule, "the candidate fires on every 3rd aten::mm call and nowhere else");
  peat_aten::detach();
  std::printf("%s\n", failures == 0 ? "libtorch example done" : "libtorch example FAILED");
  return failures == 0 ? 0 : 1;
}
