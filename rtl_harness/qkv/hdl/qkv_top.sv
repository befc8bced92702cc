// qkv_top: the QKV accelerator of seed 000 Fig. 3 (ISA: compilers/targets/qkv.py).
//
// Buffers: d1 = 128 rows x 64 bf16 (scratchpad), d2 = 64 rows x 64 bf16 (intermediate), each a
// qkv_buf of 64 skewed banks. Units: qkv_dma (load_rm, load_cm, store_rm, store_cm), mov (d2 -> d1,
// one row a cycle), qkv_gemm (LANES MAC lanes), qkv_softmax (two exp units, DIV_LANES dividers).
// One instruction executes at a time.
//
// Instruction word (64 bits; rtl_harness/qkv/driver.py encodes compilers.program.Concrete into it):
//   [2:0]   opcode  0 load_rm, 1 load_cm, 2 store_rm, 3 store_cm, 4 mov, 5 gemm, 6 softmax
//   [10:3]  n       rows (1..128; gemm: ignored)
//   [30:11] a       load_*: addr_in (HBM byte)   store_*: addr_in (d1 row)  mov: addr_in (d2 row)
//                   gemm: addr_1 (d1 row)        softmax: addr (d2 row)
//   [50:31] b       load_*: addr_out (d1 row)    store_*: addr_out (HBM byte) mov: addr_out (d1 row)
//                   gemm: addr_2 (d1 row)
//   [57:51] c       gemm: addr_out (d2 row)
// instr_valid/instr_ready handshake; ready = idle. An instruction outside the ISA's bounds (the
// description's slices and alpha domains) is dropped and pulses err together with done.
// done pulses for one cycle when the accepted instruction's effects are complete.
//
// Debug port (only while idle): dbg_en with dbg_we writes row dbg_row of d1 (dbg_buf = 0) or d2
// (dbg_buf = 1) from dbg_wdata; without dbg_we it reads it, data on dbg_rdata the next cycle.
// Element x of a row is bits [16x +: 16] on every 1024-bit port.

module qkv_top #(
  parameter int LANES = 64,
  parameter int DIV_LANES = 16
) (
  input  logic          clk,
  input  logic          rst_n,
  // instructions
  input  logic          instr_valid,
  output logic          instr_ready,
  /* verilator lint_off UNUSEDSIGNAL */
  input  logic [63:0]   instr_word,   // bits [63:58] are reserved
  /* verilator lint_on UNUSEDSIGNAL */
  output logic          busy,
  output logic          done,
  output logic          err,
  // simulation HBM (served by the testbench)
  output logic          hbm_req_valid,
  input  logic          hbm_req_ready,
  output logic          hbm_req_we,
  output logic [19:0]   hbm_req_addr,
  output logic [511:0]  hbm_req_wdata,
  input  logic          hbm_rsp_valid,
  input  logic [511:0]  hbm_rsp_rdata,
  // debug access to d1/d2
  input  logic          dbg_en,
  input  logic          dbg_we,
  input  logic          dbg_buf,
  input  logic [6:0]    dbg_row,
  input  logic [1023:0] dbg_wdata,
  output logic [1023:0] dbg_rdata
);
  localparam logic [2:0] OP_LOAD_RM = 3'd0, OP_LOAD_CM = 3'd1, OP_STORE_RM = 3'd2, OP_STORE_CM = 3'd3,
                         OP_MOV = 3'd4, OP_GEMM = 3'd5, OP_SOFTMAX = 3'd6;

  // ---------------------------------------------------------------- decode and bounds
  logic [2:0]  op;
  logic [7:0]  n;
  logic [19:0] fa, fb;
  logic [6:0]  fc;
  logic [20:0] hbm_end_a, hbm_end_b;   // HBM byte address + 128 n (21 bits: may exceed 2^20)
  logic [20:0] rows_a, rows_b;         // row address + n
  logic        n_ok128, n_ok64, legal, fire, busy_q;

  assign op = instr_word[2:0];
  assign n  = instr_word[10:3];
  assign fa = instr_word[30:11];
  assign fb = instr_word[50:31];
  assign fc = instr_word[57:51];
  assign hbm_end_a = {1'b0, fa} + {6'd0, n, 7'd0};
  assign hbm_end_b = {1'b0, fb} + {6'd0, n, 7'd0};
  assign rows_a = {1'b0, fa} + {13'd0, n};
  assign rows_b = {1'b0, fb} + {13'd0, n};
  assign n_ok128 = (n != 8'd0) && (n <= 8'd128);
  assign n_ok64 = (n != 8'd0) && (n <= 8'd64);

  always_comb begin
    case (op)
      OP_LOAD_RM:  legal = n_ok128 && hbm_end_a <= 21'h100000 && rows_b <= 21'd128;
      OP_LOAD_CM:  legal = n == 8'd64 && hbm_end_a <= 21'h100000 && rows_b <= 21'd128;
      OP_STORE_RM: legal = n_ok128 && rows_a <= 21'd128 && hbm_end_b <= 21'h100000;
      OP_STORE_CM: legal = n == 8'd64 && rows_a <= 21'd128 && hbm_end_b <= 21'h100000;
      OP_MOV:      legal = n_ok64 && rows_a <= 21'd64 && rows_b <= 21'd128;
      OP_GEMM:     legal = fa <= 20'd64 && fb <= 20'd64 && fc == 7'd0;
      OP_SOFTMAX:  legal = n_ok64 && rows_a <= 21'd64;
      default:     legal = 1'b0;
    endcase
  end

  logic dma_active, mov_active, gemm_active, sm_active;
  assign busy = dma_active || mov_active || gemm_active || sm_active;
  assign instr_ready = rst_n && !busy;
  assign fire = instr_valid && instr_ready;

  logic start_dma, start_mov, start_gemm, start_sm;
  assign start_dma  = fire && legal && (op <= OP_STORE_CM);
  assign start_mov  = fire && legal && (op == OP_MOV);
  assign start_gemm = fire && legal && (op == OP_GEMM);
  assign start_sm   = fire && legal && (op == OP_SOFTMAX);

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      busy_q <= 1'b0;
      err <= 1'b0;
    end else begin
      busy_q <= busy || (fire && legal);
      err <= fire && !legal;
    end
  end
  // done: the cycle after the last busy cycle, or after an illegal instruction was dropped
  assign done = (busy_q && !busy) || err;

  // ---------------------------------------------------------------- buffers
  logic          d1_re, d1_rcol, d1_we, d1_wcol;
  logic [6:0]    d1_rrow, d1_wrow;
  logic [5:0]    d1_rsel, d1_wsel;
  logic [1023:0] d1_rdata, d1_wdata;
  logic [63:0]   d1_wmask;
  logic          d2_re, d2_we;
  logic [5:0]    d2_rrow, d2_wrow;
  logic [1023:0] d2_rdata, d2_wdata;
  logic [63:0]   d2_wmask;

  qkv_buf #(.ROWS(128)) u_d1 (
    .clk, .re(d1_re), .rcol(d1_rcol), .rrow(d1_rrow), .rsel(d1_rsel), .rdata(d1_rdata),
    .we(d1_we), .wcol(d1_wcol), .wrow(d1_wrow), .wsel(d1_wsel), .wdata(d1_wdata), .wmask(d1_wmask));
  qkv_buf #(.ROWS(64)) u_d2 (
    .clk, .re(d2_re), .rcol(1'b0), .rrow(d2_rrow), .rsel(6'd0), .rdata(d2_rdata),
    .we(d2_we), .wcol(1'b0), .wrow(d2_wrow), .wsel(6'd0), .wdata(d2_wdata), .wmask(d2_wmask));

  // ---------------------------------------------------------------- units
  logic          dma_d1_re, dma_d1_rcol, dma_d1_we, dma_d1_wcol;
  logic [6:0]    dma_d1_rrow, dma_d1_wrow;
  logic [5:0]    dma_d1_rsel, dma_d1_wsel;
  logic [1023:0] dma_d1_wdata;
  logic [63:0]   dma_d1_wmask;

  qkv_dma u_dma (
    .clk, .rst_n, .start(start_dma), .kind(op[1:0]), .n(n),
    .haddr(op[1] ? fb : fa), .row(op[1] ? fa[6:0] : fb[6:0]), .active(dma_active),
    .hbm_req_valid, .hbm_req_ready, .hbm_req_we, .hbm_req_addr, .hbm_req_wdata,
    .hbm_rsp_valid, .hbm_rsp_rdata,
    .d1_re(dma_d1_re), .d1_rcol(dma_d1_rcol), .d1_rrow(dma_d1_rrow), .d1_rsel(dma_d1_rsel), .d1_rdata(d1_rdata),
    .d1_we(dma_d1_we), .d1_wcol(dma_d1_wcol), .d1_wrow(dma_d1_wrow), .d1_wsel(dma_d1_wsel),
    .d1_wdata(dma_d1_wdata), .d1_wmask(dma_d1_wmask));

  // mov: read d2 row addr_in + i in cycle i, write it to d1 row addr_out + i in cycle i + 1
  logic       mov_run, mov_wv;
  logic [5:0] mov_i, mov_src, mov_last;
  logic [6:0] mov_dst, mov_wrow;
  assign mov_active = mov_run || mov_wv;
  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      mov_run <= 1'b0;
      mov_wv <= 1'b0;
      mov_i <= '0;
      mov_src <= '0;
      mov_dst <= '0;
      mov_last <= '0;
      mov_wrow <= '0;
    end else begin
      mov_wv <= mov_run;
      mov_wrow <= mov_dst + {1'b0, mov_i};
      if (start_mov) begin
        mov_run <= 1'b1;
        mov_i <= '0;
        mov_src <= fa[5:0];
        mov_dst <= fb[6:0];
        mov_last <= 6'(n - 8'd1);
      end else if (mov_run) begin
        mov_i <= mov_i + 6'd1;
        if (mov_i == mov_last) mov_run <= 1'b0;
      end
    end
  end

  logic          gemm_d1_re, gemm_d2_we;
  logic [6:0]    gemm_d1_rrow;
  logic [5:0]    gemm_d2_wrow;
  logic [1023:0] gemm_d2_wdata;
  logic [63:0]   gemm_d2_wmask;
  qkv_gemm #(.LANES(LANES)) u_gemm (
    .clk, .rst_n, .start(start_gemm), .addr_1(fa[6:0]), .addr_2(fb[6:0]), .addr_out(fc[5:0]),
    .active(gemm_active), .d1_re(gemm_d1_re), .d1_rrow(gemm_d1_rrow), .d1_rdata(d1_rdata),
    .d2_we(gemm_d2_we), .d2_wrow(gemm_d2_wrow), .d2_wdata(gemm_d2_wdata), .d2_wmask(gemm_d2_wmask));

  logic          sm_d2_re, sm_d2_we;
  logic [5:0]    sm_d2_rrow, sm_d2_wrow;
  logic [1023:0] sm_d2_wdata;
  logic [63:0]   sm_d2_wmask;
  qkv_softmax #(.DIV_LANES(DIV_LANES)) u_softmax (
    .clk, .rst_n, .start(start_sm), .n(n[6:0]), .addr(fa[5:0]), .active(sm_active),
    .d2_re(sm_d2_re), .d2_rrow(sm_d2_rrow), .d2_rdata(d2_rdata),
    .d2_we(sm_d2_we), .d2_wrow(sm_d2_wrow), .d2_wdata(sm_d2_wdata), .d2_wmask(sm_d2_wmask));

  // ---------------------------------------------------------------- buffer port arbitration
  // one instruction at a time: at most one unit (or the idle debug port) drives each port
  logic dbg_ok;
  logic dbg_buf_q;
  assign dbg_ok = dbg_en && !busy && !fire;
  always_ff @(posedge clk) if (dbg_ok && !dbg_we) dbg_buf_q <= dbg_buf;
  assign dbg_rdata = dbg_buf_q ? d2_rdata : d1_rdata;

  always_comb begin
    // d1 read: dma (stores), gemm, debug
    d1_re = 1'b0; d1_rcol = 1'b0; d1_rrow = '0; d1_rsel = '0;
    if (dma_d1_re) begin
      d1_re = 1'b1; d1_rcol = dma_d1_rcol; d1_rrow = dma_d1_rrow; d1_rsel = dma_d1_rsel;
    end else if (gemm_d1_re) begin
      d1_re = 1'b1; d1_rrow = gemm_d1_rrow;
    end else if (dbg_ok && !dbg_we && !dbg_buf) begin
      d1_re = 1'b1; d1_rrow = dbg_row;
    end
    // d1 write: dma (loads), mov, debug
    d1_we = 1'b0; d1_wcol = 1'b0; d1_wrow = '0; d1_wsel = '0; d1_wdata = '0; d1_wmask = '0;
    if (dma_d1_we) begin
      d1_we = 1'b1; d1_wcol = dma_d1_wcol; d1_wrow = dma_d1_wrow; d1_wsel = dma_d1_wsel;
      d1_wdata = dma_d1_wdata; d1_wmask = dma_d1_wmask;
    end else if (mov_wv) begin
      d1_we = 1'b1; d1_wrow = mov_wrow; d1_wdata = d2_rdata; d1_wmask = '1;
    end else if (dbg_ok && dbg_we && !dbg_buf) begin
      d1_we = 1'b1; d1_wrow = dbg_row; d1_wdata = dbg_wdata; d1_wmask = '1;
    end
    // d2 read: mov, softmax, debug
    d2_re = 1'b0; d2_rrow = '0;
    if (mov_run) begin
      d2_re = 1'b1; d2_rrow = mov_src + mov_i;
    end else if (sm_d2_re) begin
      d2_re = 1'b1; d2_rrow = sm_d2_rrow;
    end else if (dbg_ok && !dbg_we && dbg_buf) begin
      d2_re = 1'b1; d2_rrow = dbg_row[5:0];
    end
    // d2 write: gemm, softmax, debug
    d2_we = 1'b0; d2_wrow = '0; d2_wdata = '0; d2_wmask = '0;
    if (gemm_d2_we) begin
      d2_we = 1'b1; d2_wrow = gemm_d2_wrow; d2_wdata = gemm_d2_wdata; d2_wmask = gemm_d2_wmask;
    end else if (sm_d2_we) begin
      d2_we = 1'b1; d2_wrow = sm_d2_wrow; d2_wdata = sm_d2_wdata; d2_wmask = sm_d2_wmask;
    end else if (dbg_ok && dbg_we && dbg_buf) begin
      d2_we = 1'b1; d2_wrow = dbg_row[5:0]; d2_wdata = dbg_wdata; d2_wmask = '1;
    end
  end
endmodule
