// qkv_buf: one on-chip buffer of ROWS rows x 64 bf16 elements (d1: 128 rows, d2: 64 rows), built
// from 64 single-port-per-direction banks (1 read + 1 write per cycle, 16 bits x ROWS each, a plain
// SRAM macro) in a skewed layout: element (row r, column c) lives in bank (r + c) mod 64 at
// address r. A whole row and a whole 64-row column both touch every bank exactly once, so one
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
  logic [1023:0] bank_q;      // read registers, bank-ordered
  logic [1023:0] wdata_b;     // write data, bank-ordered
  logic [63:0]   wmask_b;
  logic [2047:0] rd2, wd2;
  logic [127:0]  wm2;

  assign rskew = rcol ? rrow[5:0] + rsel : rrow[5:0];
  assign wskew = wcol ? wrow[5:0] + wsel : wrow[5:0];

  // bank b gets element (b - skew) mod 64: rotate left by skew elements
  always_comb begin
    wd2 = {wdata, wdata} << {wskew, 4'b0000};
    wdata_b = wd2[2047:1024];
    wm2 = {wmask, wmask} << wskew;
    wmask_b = wm2[127:64];
    // element x comes from bank (skew + x) mod 64: rotate right by skew elements
    rd2 = {bank_q, bank_q} >> {rskew_q, 4'b0000};
    rdata = rd2[1023:0];
  end

  always_ff @(posedge clk) if (re) rskew_q <= rskew;

  for (genvar b = 0; b < 64; b++) begin : g_bank
    logic [15:0]   mem [ROWS];
    logic [AW-1:0] raddr, waddr;
    logic [5:0]    roff, woff;   // which element of the port this bank serves
    logic [15:0]   q;
    localparam logic [5:0] BI = b;
    assign roff = BI - rskew;
    assign woff = BI - wskew;
    assign raddr = rcol ? rrow + roff : rrow;   // column mode: BASE + element (< ROWS)
    assign waddr = wcol ? wrow + woff : wrow;
    always_ff @(posedge clk) begin
      if (we && wmask_b[b]) mem[waddr] <= wdata_b[16*b +: 16];
      if (re) q <= mem[raddr];
    end
    assign bank_q[16*b +: 16] = q;
  end
endmodule
