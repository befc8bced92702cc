// C++ shim of the Verilated gemmini_scale_lane (one lane of the fp32 scale unit) for ctypes:
// evaluates the combinational lane on arrays of (int32 x, fp32 scale bits) so tests can compare
// it with numpy on many vectors (tests/rtl_harness/test_gemmini_rtl.py).

#include "Vgemmini_scale_lane.h"
#include "verilated.h"

#include <cstdint>

namespace {
struct Lane {
    VerilatedContext ctx;
    Vgemmini_scale_lane* m;
};
}  // namespace

extern "C" {

void* lane_new() {
    Lane* l = new Lane;
    l->m = new Vgemmini_scale_lane(&l->ctx);
    return l;
}

void lane_free(void* p) {
    Lane* l = static_cast<Lane*>(p);
    l->m->final();
    delete l->m;
    delete l;
}

void lane_eval(void* p, const uint32_t* x, const uint32_t* scale, uint8_t* q, uint64_t n) {
    Vgemmini_scale_lane* m = static_cast<Lane*>(p)->m;
    for (uint64_t i = 0; i < n; i++) {
        m->x = x[i];
        m->scale = scale[i];
        m->eval();
        q[i] = static_cast<uint8_t>(m->q);
    }
}

}  // extern "C"
