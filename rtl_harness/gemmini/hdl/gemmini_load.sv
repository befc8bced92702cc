// Gemmini-ISA RTL: the load unit (MVIN, MVIN2, MVIN3).
//
// What belongs here: mvins, from DRAM read requests to scratchpad / accumulator row writes. The
// request side and the response side are decoupled: a command may start issuing its requests
// as soon as the previous one has issued its last (`ready`), while the response side still
// writes the previous command's rows; the response side holds the command it is writing and
// one more, and finishes them in order (`done` with the command's `done_tag`). A zero load (rs1
// = 0, no DRAM requests) runs alone: it starts only on an idle unit, and nothing starts beside it.
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
  parameter int TAGW     = 4,
  localparam int SPA = $clog2(SP_ROWS),
  localparam int ACA = $clog2(ACC_ROWS)
) (
  input  logic                 clk,
  input  logic                 rst_n,
  input  logic                 start,
  output logic                 ready,
  input  logic [TAGW-1:0]      tag,
  input  logic [63:0]          rs1,
  input  logic [63:0]          rs2,
  input  logic                 cfg_shrunk,
  input  logic [15:0]          cfg_block_stride,
  input  logic [31:0]          cfg_scale,
  input  logic [63:0]          cfg_stride,
  output logic                 done,
  output logic [TAGW-1:0]      done_tag,
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

  // ---- request side (the command issuing its DRAM reads) --------------------------------------
  logic           issuing;
  logic [15:0]    i_rows;
  logic [BW-1:0]  i_nblocks;
  logic [63:0]    i_stride, i_blk_bytes;
  logic [BW-1:0]  ik;
  logic [CW-1:0]  ir;
  logic [63:0]    iaddr, iblk;

  // ---- response side: the command being written (c_*) and the one after it (n_*) -------------
  logic           active, zero_mode, is_acc, accum, eb4;
  logic [15:0]    rows;
  logic [BW-1:0]  nblocks;
  logic [RW-1:0]  bstride;
  logic [31:0]    scale;
  logic [TAGW-1:0] ctag;
  logic [BW-1:0]  pk;
  logic [CW-1:0]  pr;
  logic [RW-1:0]  prow, pblk;
  logic [15:0]    pcols;                        // columns left in the current and later blocks
  logic           n_v, n_zero, n_is_acc, n_accum, n_eb4;
  logic [15:0]    n_rows, n_cols;
  logic [BW-1:0]  n_nblocks;
  logic [RW-1:0]  n_bstride, n_row0;
  logic [31:0]    n_scale;
  logic [TAGW-1:0] n_tag;
  logic           resp, last_item;
  // stage 1 (one item per cycle), with its command's attributes
  logic           p1_v, p1_last, p1_is_acc, p1_accum, p1_eb4;
  logic [RW-1:0]  p1_row;
  logic [DIM-1:0] p1_mask;
  logic [DIM*32-1:0] p1_data;
  logic [31:0]    p1_scale;
  logic [TAGW-1:0] p1_tag;
  // forwarding of the last accumulator write
  logic           fwd_v;
  logic [ACA-1:0] fwd_addr;
  logic [DIM*32-1:0] fwd_data;
  logic [DIM-1:0] fwd_mask;

  logic [15:0]    cols_w;
  logic [BW-1:0]  nblocks_w;
  assign cols_w    = rs2[47:32];
  assign nblocks_w = BW'((32'(cols_w) + DIM - 1) / DIM);

  // a new command: the request side is free and the response side has room; a zero load runs alone
  assign ready = !issuing && !(active && (zero_mode || n_v));

  assign resp = active && (zero_mode ? 1'b1 : dram_resp_valid);
  assign last_item = resp && (16'(pr) == rows - 16'd1) && (pk == nblocks - BW'(1));
  assign dram_req_valid = issuing;
  assign dram_req_addr  = iaddr;

  // ---- stage 1: elements -> values ------------------------------------------------------------
  logic [DIM*32-1:0] val, old_row;
  assign scl_scale = p1_scale;
  for (genvar l = 0; l < DIM; l++) begin : g_x
    assign scl_x[l*32 +: 32] = {{24{p1_data[l*8 + 7]}}, p1_data[l*8 +: 8]};
  end

  always_comb begin
    for (int l = 0; l < DIM; l++) begin
      old_row[l*32 +: 32] = (fwd_v && fwd_addr == ACA'(p1_row) && fwd_mask[l]) ? fwd_data[l*32 +: 32]
                                                                              : acc_rdata[l*32 +: 32];
      if (p1_eb4) val[l*32 +: 32] = p1_data[l*32 +: 32];
      else        val[l*32 +: 32] = {{24{scl_q[l*8 + 7]}}, scl_q[l*8 +: 8]};
    end
    sp_we     = p1_v && !p1_is_acc;
    sp_waddr  = SPA'(p1_row);
    sp_wdata  = scl_q;
    sp_wmask  = p1_mask;
    acc_we    = p1_v && p1_is_acc;
    acc_waddr = ACA'(p1_row);
    acc_wmask = p1_mask;
    for (int l = 0; l < DIM; l++) begin
      acc_wdata[l*32 +: 32] = val[l*32 +: 32] + (p1_accum ? old_row[l*32 +: 32] : 32'd0);
    end
    // the old row for the item arriving now (used next cycle in stage 1)
    acc_re    = resp && is_acc && accum;
    acc_raddr = ACA'(prow);
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      active  <= 1'b0;
      issuing <= 1'b0;
      n_v     <= 1'b0;
      done    <= 1'b0;
      p1_v    <= 1'b0;
      fwd_v   <= 1'b0;
    end else begin
      done <= 1'b0;
      p1_v <= 1'b0;
      // request side: one DRAM read per cycle, block-major
      if (issuing) begin
        if (16'(ir) == i_rows - 16'd1) begin
          ir    <= '0;
          ik    <= ik + BW'(1);
          iblk  <= iblk + i_blk_bytes;
          iaddr <= iblk + i_blk_bytes;
          if (ik == i_nblocks - BW'(1)) issuing <= 1'b0;
        end else begin
          ir    <= ir + CW'(1);
          iaddr <= iaddr + i_stride;
        end
      end
      // response side: item (pk, pr) arrives now
      if (resp) begin
        p1_v      <= 1'b1;
        p1_row    <= prow;
        p1_data   <= zero_mode ? '0 : dram_resp_rdata;
        p1_is_acc <= is_acc;
        p1_accum  <= accum;
        p1_eb4    <= eb4;
        p1_scale  <= scale;
        p1_tag    <= ctag;
        for (int l = 0; l < DIM; l++) p1_mask[l] <= 32'(l) < 32'(pcols);
        p1_last <= last_item;
        if (16'(pr) == rows - 16'd1) begin
          pr    <= '0;
          pk    <= pk + BW'(1);
          pblk  <= pblk + bstride;
          prow  <= pblk + bstride;
          pcols <= (pcols > 16'(DIM)) ? pcols - 16'(DIM) : 16'd0;
        end else begin
          pr   <= pr + CW'(1);
          prow <= prow + RW'(1);
        end
      end
      // the current command's last item: the next one (if any) takes the response side
      if (last_item) begin
        active <= n_v;
        if (n_v) begin
          n_v <= 1'b0;
          zero_mode <= n_zero;  is_acc <= n_is_acc;  accum <= n_accum;  eb4 <= n_eb4;
          rows <= n_rows;  nblocks <= n_nblocks;  bstride <= n_bstride;  scale <= n_scale;  ctag <= n_tag;
          pk <= '0;  pr <= '0;  prow <= n_row0;  pblk <= n_row0;  pcols <= n_cols;
        end
      end
      if (start) begin
        if (rs1 != 64'd0) begin
          issuing     <= 1'b1;
          i_rows      <= rs2[63:48];
          i_nblocks   <= nblocks_w;
          i_stride    <= cfg_stride;
          i_blk_bytes <= (rs2[31] && !cfg_shrunk) ? 64'(4 * DIM) : 64'(DIM);
          ik <= '0;  ir <= '0;  iaddr <= rs1;  iblk <= rs1;
        end
        if (!active || last_item) begin               // straight onto the response side
          active    <= 1'b1;
          zero_mode <= rs1 == 64'd0;
          is_acc    <= rs2[31];
          accum     <= rs2[31] && rs2[30];
          eb4       <= rs2[31] && !cfg_shrunk;
          rows      <= rs2[63:48];
          nblocks   <= nblocks_w;
          bstride   <= RW'(cfg_block_stride);
          scale     <= cfg_scale;
          ctag      <= tag;
          pk <= '0;  pr <= '0;  prow <= RW'(rs2[28:0]);  pblk <= RW'(rs2[28:0]);
          pcols <= cols_w;
        end else begin                                // behind the command being written
          n_v       <= 1'b1;
          n_zero    <= rs1 == 64'd0;
          n_is_acc  <= rs2[31];
          n_accum   <= rs2[31] && rs2[30];
          n_eb4     <= rs2[31] && !cfg_shrunk;
          n_rows    <= rs2[63:48];
          n_cols    <= cols_w;
          n_nblocks <= nblocks_w;
          n_bstride <= RW'(cfg_block_stride);
          n_row0    <= RW'(rs2[28:0]);
          n_scale   <= cfg_scale;
          n_tag     <= tag;
        end
      end
      if (p1_v && p1_last) begin
        done     <= 1'b1;
        done_tag <= p1_tag;
      end
      fwd_v    <= acc_we;
      fwd_addr <= acc_waddr;
      fwd_data <= acc_wdata;
      fwd_mask <= acc_wmask;
    end
  end

  logic unused;
  assign unused = &{1'b0, rs1[0], rs2[29]};
endmodule
