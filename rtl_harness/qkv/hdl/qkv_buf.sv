// qkv_buf: one on-chip buffer of ROWS rows x 64 bf16 elements (d1: 128 rows, d2: 64 rows), built
// from 64 banks (qkv_sram: 1 read + 1 write port, 16 bits x ROWS each, a plain SRAM macro) in a
// skewed layout: element (row r, column c) lives in bank (r + c) mod 64 at address r. A whole row and a whole 64-row column both touch every bank exactly once, so one
// port serves
//   row mode:    the 64 elements of row R            (element x = column x), and
//   column mode: column C of rows BASE..BASE+63      (element x = row BASE + x; BASE + 63 < ROWS),
// which is what the transposing loads/stores (load_cm/store_cm) need without a transpose buffer.
//
// Read: 1-cycle latency; rdata keeps the last read's value until the next read (no read: hold).
// Write: per-element mask. Element x of a port's 1024-bit data is bits [16x +: 16].

module qkv_buf #(
  parameter int ROWS = 128,
  localparam int AW = $clog2(ROWS)
) (
  input  logic            clk,
  input  logic            re,
  input  logic            rcol,
  input  logic [AW-1:0]   rrow,
  input  logic [5:0]      rsel,
  output logic [1023:0]   rdata,
  input  logic            we,
  input  logic            wcol,
  input  logic [AW-1:0]   wrow,
  input  logic [5:0]      wsel,
  input  logic [1023:0]   wdata,
  input  logic [63:0]     wmask
);
  // skew of element 0: the bank that holds element x is (skew + x) mod 64
  logic [5:0]    rskew, wskew, rskew_q;
  logic [1023:0] bank_q;      // the banks' read data, bank-ordered
  logic [1023:0] wdata_b;     // write data, bank-ordered
  logic [63:0]   wmask_b;

  assign rskew = rcol ? rrow[5:0] + rsel : rrow[5:0];
  assign wskew = wcol ? wrow[5:0] + wsel : wrow[5:0];

  // rotations by whole 16-bit elements, as 6 stages of fixed rotations (a log shifter)
  /* verilator lint_off UNUSEDSIGNAL */   // t: only the upper half of each doubled vector is used
  function automatic logic [1023:0] rot_left(input logic [1023:0] v, input logic [5:0] s);
    logic [2047:0] t;
    rot_left = v;
    for (int k = 0; k < 6; k++) begin
      t = {rot_left, rot_left} << (16 << k);
      if (s[k]) rot_left = t[2047:1024];
    end
  endfunction
  function automatic logic [63:0] rot_left_mask(input logic [63:0] v, input logic [5:0] s);
    logic [127:0] t;
    rot_left_mask = v;
    for (int k = 0; k < 6; k++) begin
      t = {rot_left_mask, rot_left_mask} << (1 << k);
      if (s[k]) rot_left_mask = t[127:64];
    end
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  always_comb begin
    // bank b gets element (b - skew) mod 64: rotate left by skew elements
    wdata_b = rot_left(wdata, wskew);
    wmask_b = rot_left_mask(wmask, wskew);
    // element x comes from bank (skew + x) mod 64: rotate right by skew = left by 64 - skew
    rdata = rot_left(bank_q, 6'd0 - rskew_q);
  end

  always_ff @(posedge clk) if (re) rskew_q <= rskew;

  for (genvar b = 0; b < 64; b++) begin : g_bank
    logic [AW-1:0] raddr, waddr;
    logic [5:0]    roff, woff;   // which element of the port this bank serves
    localparam logic [5:0] BI = b;
    assign roff = BI - rskew;
    assign woff = BI - wskew;
    assign raddr = rcol ? rrow + roff : rrow;   // column mode: BASE + element (< ROWS)
    assign waddr = wcol ? wrow + woff : wrow;
    qkv_sram #(.DEPTH(ROWS), .WIDTH(16)) u_bank (
      .clk, .re, .raddr, .rdata(bank_q[16*b +: 16]),
      .we(we && wmask_b[b]), .waddr, .wdata(wdata_b[16*b +: 16]));
  end
endmodule
