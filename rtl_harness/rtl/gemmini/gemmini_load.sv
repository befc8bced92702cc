// Gemmini-ISA RTL: the load unit (MVIN, MVIN2, MVIN3).
//
// What belongs here: one mvin, from DRAM read requests to scratchpad / accumulator row writes.
// An mvin of rows x cols moves ceil(cols / DIM) blocks; block k lands block_stride * k rows after
// the first. Items (block k, row r) go in block-major order (all rows of block 0, then block 1,
// ...), exactly the order in which the functional model writes, so overlapping blocks (a
// block_stride smaller than rows) end the same way. Each item is one DRAM read of DIM elements
// (DIM bytes; 4*DIM bytes for an int32 accumulator load) at rs1 + k*DIM*elem_bytes + r*stride.
// Requests go out one per cycle; responses come back in order after the testbench's fixed latency
// and are processed one per cycle:
//   int8 elements (scratchpad, or accumulator with `shrunk`): x * scale -> RNE -> saturate int8
//   (the shared scale unit), widened to int32 for the accumulator;
//   int32 elements (accumulator, not shrunk): raw, no scale;
//   accumulator with bit 30: the old row is read when the response arrives and the previous
//   write is forwarded (consecutive items may hit the same row when blocks overlap).
// rs1 = 0 loads zeros without touching DRAM (Spike's rule; the zeros are scaled like data).

module gemmini_load #(
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
  input  logic                 cfg_shrunk,
  input  logic [15:0]          cfg_block_stride,
  input  logic [31:0]          cfg_scale,
  input  logic [63:0]          cfg_stride,
  output logic                 done,
  // DRAM
  output logic                 dram_req_valid,
  output logic [63:0]          dram_req_addr,
  input  logic                 dram_resp_valid,
  input  logic [DIM*32-1:0]    dram_resp_rdata,
  // the shared scale unit
  output logic [DIM*32-1:0]    scl_x,
  output logic [31:0]          scl_scale,
  input  logic [DIM*8-1:0]     scl_q,
  // local memories
  output logic                 sp_we,
  output logic [SPA-1:0]       sp_waddr,
  output logic [DIM*8-1:0]     sp_wdata,
  output logic [DIM-1:0]       sp_wmask,
  output logic                 acc_re,
  output logic [ACA-1:0]       acc_raddr,
  input  logic [DIM*32-1:0]    acc_rdata,
  output logic                 acc_we,
  output logic [ACA-1:0]       acc_waddr,
  output logic [DIM*32-1:0]    acc_wdata,
  output logic [DIM-1:0]       acc_wmask
);
  localparam int CW = $clog2(DIM + 1);
  localparam int BW = 8;                       // block counter (at most 64 columns)
  localparam int RW = (SPA > ACA) ? SPA : ACA; // local row arithmetic

  logic           active, issuing, zero_mode;
  logic           is_acc, accum, eb4;
  logic [15:0]    rows;
  logic [BW-1:0]  nblocks;
  logic [RW-1:0]  bstride;
  logic [31:0]    scale;
  logic [63:0]    stride, blk_bytes;

  // request side
  logic [BW-1:0]  ik;
  logic [CW-1:0]  ir;
  logic [63:0]    iaddr, iblk;
  // response side
  logic [BW-1:0]  pk;
  logic [CW-1:0]  pr;
  logic [RW-1:0]  prow, pblk;
  logic [15:0]    pcols;                        // columns left in the current and later blocks
  logic           resp;
  // stage 1 (one item per cycle)
  logic           p1_v, p1_last;
  logic [RW-1:0]  p1_row;
  logic [DIM-1:0] p1_mask;
  logic [DIM*32-1:0] p1_data;
  // forwarding of the last accumulator write
  logic           fwd_v;
  logic [ACA-1:0] fwd_addr;
  logic [DIM*32-1:0] fwd_data;
  logic [DIM-1:0] fwd_mask;

  logic [15:0]    cols_w;
  logic [BW-1:0]  nblocks_w;
  assign cols_w    = rs2[47:32];
  assign nblocks_w = BW'((32'(cols_w) + DIM - 1) / DIM);

  assign resp = active && (zero_mode ? 1'b1 : dram_resp_valid);
  assign dram_req_valid = issuing;
  assign dram_req_addr  = iaddr;

  // ---- stage 1: elements -> values ------------------------------------------------------------
  logic [DIM*32-1:0] val, old_row;
  assign scl_scale = scale;
  for (genvar l = 0; l < DIM; l++) begin : g_x
    assign scl_x[l*32 +: 32] = {{24{p1_data[l*8 + 7]}}, p1_data[l*8 +: 8]};
  end

  always_comb begin
    for (int l = 0; l < DIM; l++) begin
      old_row[l*32 +: 32] = (fwd_v && fwd_addr == ACA'(p1_row) && fwd_mask[l]) ? fwd_data[l*32 +: 32]
                                                                              : acc_rdata[l*32 +: 32];
      if (eb4) val[l*32 +: 32] = p1_data[l*32 +: 32];
      else     val[l*32 +: 32] = {{24{scl_q[l*8 + 7]}}, scl_q[l*8 +: 8]};
    end
    sp_we     = p1_v && !is_acc;
    sp_waddr  = SPA'(p1_row);
    sp_wdata  = scl_q;
    sp_wmask  = p1_mask;
    acc_we    = p1_v && is_acc;
    acc_waddr = ACA'(p1_row);
    acc_wmask = p1_mask;
    for (int l = 0; l < DIM; l++) begin
      acc_wdata[l*32 +: 32] = val[l*32 +: 32] + (accum ? old_row[l*32 +: 32] : 32'd0);
    end
    // the old row for the item arriving now (used next cycle in stage 1)
    acc_re    = resp && is_acc && accum;
    acc_raddr = ACA'(prow);
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      active  <= 1'b0;
      issuing <= 1'b0;
      done    <= 1'b0;
      p1_v    <= 1'b0;
      fwd_v   <= 1'b0;
    end else begin
      done <= 1'b0;
      p1_v <= 1'b0;
      if (start) begin
        active    <= 1'b1;
        zero_mode <= rs1 == 64'd0;
        issuing   <= rs1 != 64'd0;
        is_acc    <= rs2[31];
        accum     <= rs2[31] && rs2[30];
        eb4       <= rs2[31] && !cfg_shrunk;
        rows      <= rs2[63:48];
        nblocks   <= nblocks_w;
        bstride   <= RW'(cfg_block_stride);
        scale     <= cfg_scale;
        stride    <= cfg_stride;
        blk_bytes <= (rs2[31] && !cfg_shrunk) ? 64'(4 * DIM) : 64'(DIM);
        ik <= '0;  ir <= '0;  iaddr <= rs1;  iblk <= rs1;
        pk <= '0;  pr <= '0;  prow <= RW'(rs2[28:0]);  pblk <= RW'(rs2[28:0]);
        pcols <= cols_w;
      end
      // request side: one DRAM read per cycle, block-major
      if (issuing) begin
        if (16'(ir) == rows - 16'd1) begin
          ir    <= '0;
          ik    <= ik + BW'(1);
          iblk  <= iblk + blk_bytes;
          iaddr <= iblk + blk_bytes;
          if (ik == nblocks - BW'(1)) issuing <= 1'b0;
        end else begin
          ir    <= ir + CW'(1);
          iaddr <= iaddr + stride;
        end
      end
      // response side: item (pk, pr) arrives now
      if (resp) begin
        p1_v    <= 1'b1;
        p1_row  <= prow;
        p1_data <= zero_mode ? '0 : dram_resp_rdata;
        for (int l = 0; l < DIM; l++) p1_mask[l] <= 32'(l) < 32'(pcols);
        p1_last <= (16'(pr) == rows - 16'd1) && (pk == nblocks - BW'(1));
        if (16'(pr) == rows - 16'd1) begin
          pr    <= '0;
          pk    <= pk + BW'(1);
          pblk  <= pblk + bstride;
          prow  <= pblk + bstride;
          pcols <= (pcols > 16'(DIM)) ? pcols - 16'(DIM) : 16'd0;
          if (pk == nblocks - BW'(1)) active <= 1'b0;
        end else begin
          pr   <= pr + CW'(1);
          prow <= prow + RW'(1);
        end
      end
      if (p1_v && p1_last) done <= 1'b1;
      fwd_v    <= acc_we;
      fwd_addr <= acc_waddr;
      fwd_data <= acc_wdata;
      fwd_mask <= acc_wmask;
    end
  end

  logic unused;
  assign unused = &{1'b0, rs1[0], rs2[29]};
endmodule
