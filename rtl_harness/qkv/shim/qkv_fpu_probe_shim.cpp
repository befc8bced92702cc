// ctypes shim of qkv_fpu_probe: evaluates the floating-point units on arrays of operands.
#include "Vqkv_fpu_probe.h"
#include "verilated.h"

#include <cstdint>

extern "C" {

void* probe_new() {
  VerilatedContext* ctx = new VerilatedContext;
  return new Vqkv_fpu_probe{ctx};
}

void probe_free(void* h) {
  Vqkv_fpu_probe* m = static_cast<Vqkv_fpu_probe*>(h);
  VerilatedContext* ctx = m->contextp();
  delete m;
  delete ctx;
}

// For i < n: inputs a[i], b[i], c[i]; outputs fma[i], add[i], div[i], exp[i] (exp of a[i]).
void probe_eval(void* h, const uint16_t* a, const uint16_t* b, const uint32_t* c, uint32_t* fma,
                uint16_t* add, uint16_t* div, uint16_t* ex, uint64_t n) {
  Vqkv_fpu_probe* m = static_cast<Vqkv_fpu_probe*>(h);
  for (uint64_t i = 0; i < n; i++) {
    m->a = a[i];
    m->b = b[i];
    m->c = c[i];
    m->eval();
    fma[i] = m->fma_r;
    add[i] = m->add_y;
    div[i] = m->div_y;
    ex[i] = m->exp_y;
  }
}

}  // extern "C"
