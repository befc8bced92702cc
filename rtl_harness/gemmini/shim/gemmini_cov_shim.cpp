// The coverage build of gemmini_top's ctypes shim: gemmini_shim.cpp unchanged, plus the calls the
// campaign's RTL coverage needs (built only with --coverage-line --coverage-toggle by
// rtl_harness/gemmini/driver.py; the include path to this folder comes from the build's -CFLAGS).
// rtl_harness/coverage.py drives them: after each run the model's counters are added to the
// process's tally and zeroed (gm_cov_take); a tally is written as Verilator's .dat text through a
// model of its own (gm_cov_write_counts), so per-instance points merge as Verilator merges them.
#include "gemmini_shim.cpp"

#include "Vgemmini_top__Syms.h"
#include "verilated_cov.h"

namespace {
constexpr uint64_t kCovPoints = sizeof(Vgemmini_top__Syms::__Vcoverage) / sizeof(uint32_t);
}

extern "C" {

// Coverage counters of the design (the length of a tally).
uint64_t gm_cov_points() { return kCovPoints; }

// Add the model's counters to `tally` (kCovPoints entries) and zero them.
void gm_cov_take(void* p, uint64_t* tally) {
    uint32_t* c = static_cast<Sim*>(p)->top->rootp->vlSymsp->__Vcoverage;
    for (uint64_t i = 0; i < kCovPoints; ++i) {
        tally[i] += c[i];
        c[i] = 0;
    }
}

// Write `tally` (saturated to 32 bits) as a Verilator coverage .dat file at `path`.
void gm_cov_write_counts(const uint64_t* tally, const char* path) {
    VerilatedContext ctx;
    Vgemmini_top top{&ctx};
    uint32_t* c = top.rootp->vlSymsp->__Vcoverage;
    for (uint64_t i = 0; i < kCovPoints; ++i) c[i] = tally[i] > 0xffffffffu ? 0xffffffffu : uint32_t(tally[i]);
    ctx.coveragep()->write(path);
    top.final();
}

}
