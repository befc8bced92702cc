// Gemmini-ISA RTL: the store unit (MVOUT).
//
// What belongs here: one mvout of rows x cols (both <= DIM), one row per cycle:
//   scratchpad            -> the raw int8 bytes (cols bytes per row);
//   accumulator, bit 29   -> the raw int32 little-endian (4*cols bytes per row);
//   accumulator, no bit 29 -> acc_scale through the shared scale unit (int32 -> fp32 RNE -> * scale
//                            RNE -> round half to even -> saturate int8), then ReLU (config_st
//                            activation 1) after the clip; cols bytes per row.
// Row i goes to DRAM byte rs1 + i * stride (config_st stride), as one write request whose byte
// strobe covers exactly the row's bytes. Pipeline: local read (cycle c) -> data and conversion
// (c+1, registered into the request) -> DRAM write request (c+2).

module gemmini_store #(
  parameter int DIM      = 16,
  parameter int SP_ROWS  = 16384,
  parameter int ACC_ROWS = 1024,
  localparam int SPA = $clog2(SP_ROWS),
  localparam int ACA = $clog2(ACC_ROWS)
) (
  input  logic                 clk,
  input  logic                 rst_n,
  input  logic                 start,
  input  logic [63:0]          rs1,
  input  logic [63:0]          rs2,
  input  logic                 cfg_relu,
  input  logic [31:0]          cfg_stride,
  input  logic [31:0]          cfg_scale,
  output logic                 done,
  // DRAM writes
  output logic                 dram_req_valid,
  output logic [63:0]          dram_req_addr,
  output logic [DIM*32-1:0]    dram_req_wdata,
  output logic [DIM*4-1:0]     dram_req_wstrb,
  // the shared scale unit
  output logic [DIM*32-1:0]    scl_x,
  output logic [31:0]          scl_scale,
  input  logic [DIM*8-1:0]     scl_q,
  // local memories
  output logic                 sp_re,
  output logic [SPA-1:0]       sp_raddr,
  input  logic [DIM*8-1:0]     sp_rdata,
  output logic                 acc_re,
  output logic [ACA-1:0]       acc_raddr,
  input  logic [DIM*32-1:0]    acc_rdata
);
  localparam int CW = $clog2(DIM + 1);
  localparam int RW = (SPA > ACA) ? SPA : ACA;

  logic           reading, is_acc, raw, relu;
  logic [15:0]    rows, cols;
  logic [CW-1:0]  ri;
  logic [RW-1:0]  rrow;
  logic [31:0]    scale, stride;
  logic           s1_v, s1_last;
  logic [63:0]    s1_addr, next_addr;
  logic [DIM*32-1:0] bytes;
  logic [DIM*4-1:0]  strb;

  assign scl_x     = acc_rdata;
  assign scl_scale = scale;

  always_comb begin
    sp_re     = reading && !is_acc;
    sp_raddr  = SPA'(rrow);
    acc_re    = reading && is_acc;
    acc_raddr = ACA'(rrow);
    bytes     = '0;
    strb      = '0;
    for (int l = 0; l < DIM; l++) begin
      if (!is_acc) begin
        bytes[l*8 +: 8] = sp_rdata[l*8 +: 8];
        strb[l]         = 32'(l) < 32'(cols);
      end else if (raw) begin
        bytes[l*32 +: 32]  = acc_rdata[l*32 +: 32];
        strb[l*4 +: 4]     = (32'(l) < 32'(cols)) ? 4'hF : 4'h0;
      end else begin
        bytes[l*8 +: 8] = (relu && scl_q[l*8 + 7]) ? 8'd0 : scl_q[l*8 +: 8];
        strb[l]         = 32'(l) < 32'(cols);
      end
    end
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      reading        <= 1'b0;
      s1_v           <= 1'b0;
      dram_req_valid <= 1'b0;
      done           <= 1'b0;
    end else begin
      done           <= 1'b0;
      s1_v           <= 1'b0;
      dram_req_valid <= 1'b0;
      if (start) begin
        reading   <= 1'b1;
        is_acc    <= rs2[31];
        raw       <= rs2[29];
        relu      <= cfg_relu;
        rows      <= rs2[63:48];
        cols      <= rs2[47:32];
        ri        <= '0;
        rrow      <= RW'(rs2[28:0]);
        scale     <= cfg_scale;
        stride    <= cfg_stride;
        next_addr <= rs1;
      end
      if (reading) begin
        s1_v      <= 1'b1;
        s1_last   <= 16'(ri) == rows - 16'd1;
        s1_addr   <= next_addr;
        next_addr <= next_addr + 64'(stride);
        ri        <= ri + CW'(1);
        rrow      <= rrow + RW'(1);
        if (16'(ri) == rows - 16'd1) reading <= 1'b0;
      end
      if (s1_v) begin
        dram_req_valid <= 1'b1;
        dram_req_addr  <= s1_addr;
        dram_req_wdata <= bytes;
        dram_req_wstrb <= strb;
        if (s1_last) done <= 1'b1;
      end
    end
  end

  logic unused;
  assign unused = &{1'b0, rs2[30]};
endmodule
