// qkv_sram: one bank of a QKV buffer, a plain synchronous SRAM of DEPTH words x WIDTH bits with one
// read port and one write port (1-cycle read latency; rdata holds until the next read; a read of the
// word being written returns its old value). In an ASIC flow this is a memory-compiler macro; the
// synthesis test keeps it a black box in qkv_top and synthesizes it on its own.
module qkv_sram #(
  parameter int DEPTH = 128,
  parameter int WIDTH = 16,
  localparam int AW = $clog2(DEPTH)
) (
  input  logic             clk,
  input  logic             re,
  input  logic [AW-1:0]    raddr,
  output logic [WIDTH-1:0] rdata,
  input  logic             we,
  input  logic [AW-1:0]    waddr,
  input  logic [WIDTH-1:0] wdata
);
  logic [WIDTH-1:0] mem [DEPTH];
  always_ff @(posedge clk) begin
    if (we) mem[waddr] <= wdata;
    if (re) rdata <= mem[raddr];
  end
endmodule
