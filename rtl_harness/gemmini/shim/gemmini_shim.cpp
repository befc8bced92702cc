// C++ shim of the Verilated gemmini_top for ctypes (rtl_harness/gemmini/driver.py).
//
// What belongs here: the simulation DRAM (a byte vector) and its fixed-latency service of the
// DRAM port, the clock loop that feeds a whole command list to the design without returning to
// Python, and direct access to the scratchpad / accumulator arrays (public_flat_rw) and to the PE
// state (dbg_pe). Rows of the local memories are little-endian lane-packed (lane l at bits
// [l*w +: w]), so a row is copied as bytes on a little-endian host.

#include "Vgemmini_top.h"
#include "Vgemmini_top___024root.h"
#include "verilated.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "rows are copied as little-endian bytes");

namespace {

template <typename T>
void put_bytes(T& dst, const uint8_t* src, size_t n) {
    std::memset(static_cast<void*>(&dst), 0, sizeof(T));
    std::memcpy(static_cast<void*>(&dst), src, n < sizeof(T) ? n : sizeof(T));
}

template <typename T>
void get_bytes(const T& src, uint8_t* dst, size_t n) {
    std::memcpy(dst, static_cast<const void*>(&src), n < sizeof(T) ? n : sizeof(T));
}

struct Read {
    uint64_t due;
    uint64_t addr;
};

struct Sim {
    VerilatedContext* ctx;
    Vgemmini_top* top;
    std::vector<uint8_t> dram;
    int dim;
    unsigned latency;
    uint64_t cycles = 0;
    uint64_t dram_reads = 0;
    uint64_t dram_writes = 0;
    std::deque<Read> reads;
};

// One clock cycle whose inputs are already set: settle at clk 0, rising edge.
void tick(Sim* s) {
    s->top->clk = 0;
    s->top->eval();
    s->top->clk = 1;
    s->top->eval();
    s->cycles++;
}

}  // namespace

extern "C" {

// Sizes the shim was built for: spad rows, accumulator rows, bytes per spad row, per acc row,
// bytes of the DRAM data bus.
void gm_shape(uint64_t* out) {
    Vgemmini_top___024root* r = nullptr;
    out[0] = sizeof(r->gemmini_top__DOT__spad) / sizeof(r->gemmini_top__DOT__spad[0]);
    out[1] = sizeof(r->gemmini_top__DOT__acc) / sizeof(r->gemmini_top__DOT__acc[0]);
    out[2] = sizeof(r->gemmini_top__DOT__spad[0]);
    out[3] = sizeof(r->gemmini_top__DOT__acc[0]);
    out[4] = sizeof(Vgemmini_top::dram_resp_rdata);
}

void* gm_new(int dim, uint64_t dram_size, unsigned latency) {
    Sim* s = new Sim;
    s->ctx = new VerilatedContext;
    s->top = new Vgemmini_top(s->ctx);
    s->dram.assign(dram_size, 0);
    s->dim = dim;
    s->latency = latency < 1 ? 1 : latency;
    s->top->clk = 0;
    s->top->rst_n = 0;
    s->top->cmd_valid = 0;
    s->top->dram_resp_valid = 0;
    s->top->eval();
    return s;
}

void gm_free(void* p) {
    Sim* s = static_cast<Sim*>(p);
    s->top->final();
    delete s->top;
    delete s->ctx;
    delete s;
}

// Synchronous reset (two cycles); the local memories keep their contents.
void gm_reset(void* p) {
    Sim* s = static_cast<Sim*>(p);
    s->reads.clear();
    s->top->rst_n = 0;
    s->top->cmd_valid = 0;
    s->top->dram_resp_valid = 0;
    tick(s);
    tick(s);
    s->top->rst_n = 1;
    s->top->eval();
}

void gm_set_latency(void* p, unsigned latency) { static_cast<Sim*>(p)->latency = latency < 1 ? 1 : latency; }

uint64_t gm_dram_size(void* p) { return static_cast<Sim*>(p)->dram.size(); }

void gm_dram_resize(void* p, uint64_t n) { static_cast<Sim*>(p)->dram.assign(n, 0); }

void gm_dram_write(void* p, uint64_t off, const uint8_t* src, uint64_t n) {
    std::memcpy(static_cast<Sim*>(p)->dram.data() + off, src, n);
}

void gm_dram_read(void* p, uint64_t off, uint8_t* dst, uint64_t n) {
    std::memcpy(dst, static_cast<Sim*>(p)->dram.data() + off, n);
}

void gm_spad_write(void* p, const uint8_t* src, uint64_t rows) {
    Sim* s = static_cast<Sim*>(p);
    auto& mem = s->top->rootp->gemmini_top__DOT__spad;
    for (uint64_t i = 0; i < rows; i++) put_bytes(mem[i], src + i * s->dim, s->dim);
}

void gm_spad_read(void* p, uint8_t* dst, uint64_t rows) {
    Sim* s = static_cast<Sim*>(p);
    auto& mem = s->top->rootp->gemmini_top__DOT__spad;
    for (uint64_t i = 0; i < rows; i++) get_bytes(mem[i], dst + i * s->dim, s->dim);
}

void gm_acc_write(void* p, const uint8_t* src, uint64_t rows) {
    Sim* s = static_cast<Sim*>(p);
    auto& mem = s->top->rootp->gemmini_top__DOT__acc;
    for (uint64_t i = 0; i < rows; i++) put_bytes(mem[i], src + i * 4 * s->dim, 4 * s->dim);
}

void gm_acc_read(void* p, uint8_t* dst, uint64_t rows) {
    Sim* s = static_cast<Sim*>(p);
    auto& mem = s->top->rootp->gemmini_top__DOT__acc;
    for (uint64_t i = 0; i < rows; i++) get_bytes(mem[i], dst + i * 4 * s->dim, 4 * s->dim);
}

// Every PE's 20-bit state, sign-extended, row-major (dim*dim values).
void gm_pe_read(void* p, int32_t* dst) {
    Sim* s = static_cast<Sim*>(p);
    const size_t n = static_cast<size_t>(s->dim) * s->dim;
    std::vector<uint8_t> raw(sizeof(s->top->dbg_pe));
    get_bytes(s->top->dbg_pe, raw.data(), raw.size());
    for (size_t k = 0; k < n; k++) {
        uint32_t v = 0;
        for (int b = 0; b < 20; b++) {
            size_t bit = k * 20 + b;
            v |= static_cast<uint32_t>((raw[bit / 8] >> (bit % 8)) & 1u) << b;
        }
        dst[k] = (v & 0x80000u) ? static_cast<int32_t>(v | 0xFFF00000u) : static_cast<int32_t>(v);
    }
}

// Counters: cycles since construction, DRAM read and write requests served.
void gm_counters(void* p, uint64_t* out) {
    Sim* s = static_cast<Sim*>(p);
    out[0] = s->cycles;
    out[1] = s->dram_reads;
    out[2] = s->dram_writes;
}

// Run commands (n triples funct, rs1, rs2) to completion: every command accepted and the design
// idle. Returns the cycles taken, or -1 when max_cycles pass first, -2 on a DRAM access outside
// the simulation memory (the design asked for bytes beyond it).
int64_t gm_run(void* p, const uint64_t* cmds, uint64_t n, uint64_t max_cycles) {
    Sim* s = static_cast<Sim*>(p);
    Vgemmini_top* t = s->top;
    const uint64_t start = s->cycles;
    const size_t bus = 4 * static_cast<size_t>(s->dim);
    const uint64_t size = s->dram.size();
    std::vector<uint8_t> line(bus), strb((bus + 7) / 8);
    uint64_t i = 0;
    for (;;) {
        // inputs of this cycle
        t->cmd_valid = i < n;
        if (i < n) {
            t->cmd_funct = static_cast<uint8_t>(cmds[3 * i]);
            t->cmd_rs1 = cmds[3 * i + 1];
            t->cmd_rs2 = cmds[3 * i + 2];
        }
        if (!s->reads.empty() && s->reads.front().due == s->cycles) {
            const uint64_t a = s->reads.front().addr;
            s->reads.pop_front();
            for (size_t b = 0; b < bus; b++) line[b] = (a + b < size && a + b >= a) ? s->dram[a + b] : 0;
            put_bytes(t->dram_resp_rdata, line.data(), bus);
            t->dram_resp_valid = 1;
        } else {
            t->dram_resp_valid = 0;
        }
        t->clk = 0;
        t->eval();  // outputs are registered; this settles the new inputs before the edge
        const bool accepted = t->cmd_valid && t->cmd_ready;
        if (!accepted && i >= n && !t->busy && s->reads.empty()) break;
        if (t->dram_wr_valid) {
            const uint64_t a = t->dram_wr_addr;
            s->dram_writes++;
            get_bytes(t->dram_wr_wdata, line.data(), bus);
            get_bytes(t->dram_wr_wstrb, strb.data(), strb.size());
            for (size_t b = 0; b < bus; b++) {
                if ((strb[b / 8] >> (b % 8)) & 1u) {
                    if (a + b >= size || a + b < a) return -2;
                    s->dram[a + b] = line[b];
                }
            }
        }
        if (t->dram_rd_valid) {
            s->dram_reads++;
            s->reads.push_back({s->cycles + s->latency, t->dram_rd_addr});
        }
        t->clk = 1;
        t->eval();
        s->cycles++;
        if (accepted) i++;
        if (s->cycles - start > max_cycles) return -1;
    }
    t->cmd_valid = 0;
    return static_cast<int64_t>(s->cycles - start);
}

}  // extern "C"
