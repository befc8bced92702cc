// C++ shim around the Verilated qkv_top, loaded by rtl_harness/qkv/driver.py through ctypes.
//
// The shim owns the simulation HBM (1 MiB) and serves qkv_top's HBM port in C++ every cycle, so a
// whole instruction stream runs without returning to Python:
//   - a request accepted (valid && ready) in cycle c is applied to the HBM array in that cycle:
//     a write stores its 64 bytes, a read snapshots 64 bytes and queues them;
//   - read data comes back in request order, the earliest `latency` cycles later (default 1);
//   - hbm_req_ready is 1, or random with probability ready_permille / 1000 (seeded xorshift) to
//     exercise back-pressure; `jitter` adds 0..jitter random cycles to each read's latency.
// d1/d2 are read and written through qkv_top's debug port (one row per cycle, idle only).
//
// Every exported function takes the handle returned by qkv_new.

#include "Vqkv_top.h"
#include "verilated.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

namespace {

constexpr uint32_t kHbmBytes = 1u << 20;
constexpr int kBeat = 64;

struct Rsp {
  uint64_t due;
  uint8_t data[kBeat];
};

struct Qkv {
  VerilatedContext* ctx;
  Vqkv_top* m;
  std::vector<uint8_t> hbm;
  std::deque<Rsp> rsp;
  uint64_t cycle = 0;
  uint64_t last_due = 0;
  int latency = 1;
  int jitter = 0;
  int ready_permille = 1000;
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  uint64_t hbm_reads = 0, hbm_writes = 0;

  uint32_t rand32() {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return static_cast<uint32_t>(rng >> 11);
  }
};

void idle_inputs(Vqkv_top* m) {
  m->instr_valid = 0;
  m->instr_word = 0;
  m->hbm_req_ready = 0;
  m->hbm_rsp_valid = 0;
  m->dbg_en = 0;
  m->dbg_we = 0;
  m->dbg_buf = 0;
  m->dbg_row = 0;
}

// one clock cycle with the inputs as they are: settle, then the rising edge
void tick(Qkv* q) {
  q->m->clk = 0;
  q->m->eval();
  q->m->clk = 1;
  q->m->eval();
  q->cycle++;
}

}  // namespace

extern "C" {

void* qkv_new() {
  Qkv* q = new Qkv;
  q->ctx = new VerilatedContext;
  q->m = new Vqkv_top{q->ctx};
  q->hbm.assign(kHbmBytes, 0);
  idle_inputs(q->m);
  q->m->rst_n = 0;
  q->m->clk = 0;
  q->m->eval();
  tick(q);
  tick(q);
  q->m->rst_n = 1;
  tick(q);
  return q;
}

void qkv_free(void* h) {
  Qkv* q = static_cast<Qkv*>(h);
  q->m->final();
  delete q->m;
  delete q->ctx;
  delete q;
}

// back to the reset state (control only: HBM and the buffers keep their contents)
void qkv_reset(void* h) {
  Qkv* q = static_cast<Qkv*>(h);
  idle_inputs(q->m);
  q->rsp.clear();
  q->last_due = 0;
  q->m->rst_n = 0;
  tick(q);
  tick(q);
  q->m->rst_n = 1;
  tick(q);
}

void qkv_set_timing(void* h, int latency, int jitter, int ready_permille, uint64_t seed) {
  Qkv* q = static_cast<Qkv*>(h);
  q->latency = latency < 1 ? 1 : latency;
  q->jitter = jitter < 0 ? 0 : jitter;
  q->ready_permille = ready_permille;
  q->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
}

int qkv_hbm_write(void* h, uint32_t off, const uint8_t* src, uint32_t n) {
  Qkv* q = static_cast<Qkv*>(h);
  if (static_cast<uint64_t>(off) + n > kHbmBytes) return -1;
  std::memcpy(q->hbm.data() + off, src, n);
  return 0;
}

int qkv_hbm_read(void* h, uint32_t off, uint8_t* dst, uint32_t n) {
  Qkv* q = static_cast<Qkv*>(h);
  if (static_cast<uint64_t>(off) + n > kHbmBytes) return -1;
  std::memcpy(dst, q->hbm.data() + off, n);
  return 0;
}

// rows x 64 bf16 (uint16) of buffer `buf` (0 = d1, 1 = d2), from row 0
void qkv_buf_write(void* h, int buf, const uint16_t* src, int rows) {
  Qkv* q = static_cast<Qkv*>(h);
  Vqkv_top* m = q->m;
  idle_inputs(m);
  for (int r = 0; r < rows; r++) {
    m->dbg_en = 1;
    m->dbg_we = 1;
    m->dbg_buf = buf;
    m->dbg_row = r;
    std::memcpy(m->dbg_wdata.data(), src + 64 * r, 128);
    tick(q);
  }
  idle_inputs(m);
}

void qkv_buf_read(void* h, int buf, uint16_t* dst, int rows) {
  Qkv* q = static_cast<Qkv*>(h);
  Vqkv_top* m = q->m;
  idle_inputs(m);
  for (int r = 0; r < rows; r++) {
    m->dbg_en = 1;
    m->dbg_we = 0;
    m->dbg_buf = buf;
    m->dbg_row = r;
    tick(q);
    std::memcpy(dst + 64 * r, m->dbg_rdata.data(), 128);
  }
  idle_inputs(m);
  tick(q);
}

// Run `count` encoded instructions back to back. per_instr[i] gets instruction i's cycles (accept
// to done). Returns 0 when all completed, 1 when instruction *failed was rejected as illegal by
// the RTL (err), 2 when the run exceeded max_cycles (*failed: the instruction in flight).
// *total: cycles from the first accept to the last done.
int qkv_run(void* h, const uint64_t* words, int count, uint64_t max_cycles, uint64_t* per_instr,
            uint64_t* total, int* failed) {
  Qkv* q = static_cast<Qkv*>(h);
  Vqkv_top* m = q->m;
  int idx = 0, outstanding = -1;
  uint64_t fire_cycle = 0, first = q->cycle, start = q->cycle;
  bool started = false;
  *total = 0;
  *failed = -1;
  idle_inputs(m);
  while (true) {
    // inputs of this cycle
    m->clk = 0;
    m->instr_valid = 0;
    bool rsp_now = !q->rsp.empty() && q->rsp.front().due <= q->cycle;
    m->hbm_rsp_valid = rsp_now;
    if (rsp_now) std::memcpy(m->hbm_rsp_rdata.data(), q->rsp.front().data, kBeat);
    m->hbm_req_ready = q->ready_permille >= 1000 ? 1 : (q->rand32() % 1000u) < static_cast<uint32_t>(q->ready_permille);
    m->eval();
    if (outstanding >= 0 && m->done) {
      per_instr[outstanding] = q->cycle - fire_cycle;
      *total = q->cycle - first;
      if (m->err) {
        *failed = outstanding;
        tick(q);
        idle_inputs(m);
        return 1;
      }
      outstanding = -1;
    }
    if (outstanding < 0) {
      if (idx == count) break;
      m->instr_valid = 1;
      m->instr_word = words[idx];
      m->eval();
      if (m->instr_ready) {
        outstanding = idx++;
        fire_cycle = q->cycle;
        if (!started) {
          first = q->cycle;
          started = true;
        }
      }
    }
    if (m->hbm_req_valid && m->hbm_req_ready) {
      uint32_t addr = m->hbm_req_addr;
      if (m->hbm_req_we) {
        q->hbm_writes++;
        const uint8_t* src = reinterpret_cast<const uint8_t*>(m->hbm_req_wdata.data());
        for (int i = 0; i < kBeat && addr + i < kHbmBytes; i++) q->hbm[addr + i] = src[i];
      } else {
        q->hbm_reads++;
        Rsp r;
        for (int i = 0; i < kBeat; i++) r.data[i] = addr + i < kHbmBytes ? q->hbm[addr + i] : 0;
        uint64_t due = q->cycle + q->latency + (q->jitter ? q->rand32() % (q->jitter + 1) : 0);
        if (due < q->last_due) due = q->last_due;   // in order
        q->last_due = due;
        r.due = due;
        q->rsp.push_back(r);
      }
    }
    if (rsp_now) q->rsp.pop_front();
    m->clk = 1;
    m->eval();
    q->cycle++;
    if (q->cycle - start > max_cycles) {
      *failed = outstanding >= 0 ? outstanding : idx;
      idle_inputs(m);
      return 2;
    }
  }
  idle_inputs(m);
  return 0;
}

uint64_t qkv_cycle(void* h) { return static_cast<Qkv*>(h)->cycle; }

}  // extern "C"
