// Gemmini-ISA RTL: the execute unit (COMPUTE_PRELOADED / COMPUTE_ACCUMULATED) around the mesh.
//
// What belongs here: the sequencer of one compute command (operand reads from the scratchpad,
// preload of the stationary state, the skewed stream through the mesh, the OS read-out, the write
// of C), the operand/result buffers and the write-back arithmetic (20-bit result -> accumulator
// int32 overwrite/accumulate, or -> scratchpad: rounding right shift (OS), saturate, ReLU).
//
// One command, in phases (cycle counts for DIM = D):
//   READ    one scratchpad row per cycle: A (a_rows rows, A_stride apart), the latched preload
//           matrix (compute_preloaded only), then the rs2 operand; each row lands in its buffer as a
//           row or, transposed, as a column; lanes >= cols and rows >= rows stay 0; GARBAGE -> 0.
//           All operand reads finish before C is written, so C may overlap A/B/D.
//   LOAD    (compute_preloaded) D cycles shift the preload matrix into the state chain
//           (WS: weights B, transposed when B_transpose; OS: initial partial sums D).
//   STREAM  3D-1 cycles; mesh row q receives A-buffer element (q, t-q) at cycle t (zero outside;
//           the A buffer holds A in OS, A transposed in WS, where mesh rows are the k index),
//           column j receives Y-buffer element (t-j, j) at the top (WS: bias D, OS: B). In WS the
//           result (i, j) leaves column j's bottom at cycle i+D+j; in OS every PE accumulates.
//   DRAIN   (OS) D cycles rotate the state chain once around, reading the bottom row each cycle;
//           the state is unchanged afterwards (compute_accumulated keeps accumulating on it).
//   WB      one C row per cycle, row C_addr + C_stride*i; accumulator writes with bit 30 read the
//           old row one cycle ahead and forward the previous write (C_stride 0 writes the same row
//           again: every row's result is added in turn).

module gemmini_ex #(
  parameter int DIM      = 16,
  parameter int SP_ROWS  = 16384,
  parameter int ACC_ROWS = 1024,
  localparam int SPA = $clog2(SP_ROWS),
  localparam int ACA = $clog2(ACC_ROWS)
) (
  input  logic                  clk,
  input  logic                  rst_n,
  input  logic                  start,
  input  logic                  preloaded,     // COMPUTE_PRELOADED (else COMPUTE_ACCUMULATED)
  input  logic [63:0]           a_word,        // compute rs1
  input  logic [63:0]           y_word,        // compute rs2 (WS: D, OS: B)
  input  logic [63:0]           x_word,        // latched preload rs1 (WS: B, OS: D)
  input  logic [63:0]           c_word,        // latched preload rs2 (C)
  input  logic                  cfg_ws,
  input  logic                  cfg_relu,
  input  logic                  cfg_at,
  input  logic                  cfg_bt,
  input  logic [15:0]           cfg_a_stride,
  input  logic [31:0]           cfg_sys_shift,
  input  logic [15:0]           cfg_c_stride,
  output logic                  done,
  output logic                  sp_re,
  output logic [SPA-1:0]        sp_raddr,
  input  logic [DIM*8-1:0]      sp_rdata,
  output logic                  sp_we,
  output logic [SPA-1:0]        sp_waddr,
  output logic [DIM*8-1:0]      sp_wdata,
  output logic [DIM-1:0]        sp_wmask,
  output logic                  acc_re,
  output logic [ACA-1:0]        acc_raddr,
  input  logic [DIM*32-1:0]     acc_rdata,
  output logic                  acc_we,
  output logic [ACA-1:0]        acc_waddr,
  output logic [DIM*32-1:0]     acc_wdata,
  output logic [DIM-1:0]        acc_wmask,
  output logic [DIM*DIM*20-1:0] pe_state
);
  localparam int CW = $clog2(DIM + 1);
  localparam int TW = $clog2(3 * DIM + 1);
  localparam logic [31:0] GARBAGE = 32'hFFFF_FFFF;
  localparam logic [2:0] S_IDLE = 3'd0, S_READ = 3'd1, S_RWAIT = 3'd2, S_LOAD = 3'd3, S_STREAM = 3'd4,
                         S_DRAIN = 3'd5, S_WB = 3'd6, S_WBWAIT = 3'd7;

  logic [2:0] st;

  // ---- operands, decoded at start ------------------------------------------------------------
  logic          a_garb, x_use, y_garb, c_garb, c_acc, c_accum;
  logic [15:0]   a_rows, a_cols, x_rows, x_cols, y_rows, y_cols, c_rows, c_cols;
  logic [SPA-1:0] x_row0, y_row0;
  logic [28:0]   c_row0;

  // ---- buffers (element (i, j) of a DIM x DIM buffer at index i*DIM + j) ---------------------
  (* mem2reg *) logic [7:0]  abuf [DIM*DIM];
  (* mem2reg *) logic [7:0]  xbuf [DIM*DIM];
  (* mem2reg *) logic [7:0]  ybuf [DIM*DIM];
  (* mem2reg *) logic [19:0] rbuf [DIM*DIM];

  // ---- mesh ----------------------------------------------------------------------------------
  logic                 m_shift, m_mac;
  logic [DIM*8-1:0]     feed_a;
  logic [DIM*20-1:0]    feed_v, feed_c, out_v, out_c;

  gemmini_mesh #(.DIM(DIM)) u_mesh (
    .clk(clk), .rst_n(rst_n), .ws(cfg_ws), .shift(m_shift), .mac(m_mac),
    .feed_a(feed_a), .feed_v(feed_v), .feed_c(feed_c), .out_v(out_v), .out_c(out_c), .state(pe_state)
  );

  // ---- READ phase counters -------------------------------------------------------------------
  logic [1:0]     op;          // 0 A, 1 X (preload matrix), 2 Y (rs2 operand)
  logic [CW-1:0]  r;
  logic [SPA-1:0] ptr;
  logic [15:0]    op_rows;
  logic           rd_v;
  logic [1:0]     rd_op;
  logic [CW-1:0]  rd_r;
  logic [15:0]    rd_cols;
  logic           rd_colw;
  logic [DIM*8-1:0] rd_lanes;

  always_comb begin
    case (op)
      2'd0:    op_rows = a_garb ? 16'd0 : a_rows;
      2'd1:    op_rows = x_use ? x_rows : 16'd0;
      default: op_rows = y_garb ? 16'd0 : y_rows;
    endcase
  end

  // ---- STREAM / LOAD / DRAIN / WB counters ---------------------------------------------------
  logic [TW-1:0]  t;
  logic [CW-1:0]  wi;
  logic [28:0]    c_ptr;
  logic           w1_v;
  logic           pre;
  logic [CW-1:0]  w1_i;
  logic [28:0]    w1_addr;
  logic           fwd_v;
  logic [ACA-1:0] fwd_addr;
  logic [DIM*32-1:0] fwd_data;
  logic [DIM-1:0] fwd_mask;

  // rows of the rs2 / preload operands are read at row0 + r; A at row0 + A_stride * r
  logic [SPA-1:0] a_stride_s;
  assign a_stride_s = SPA'(cfg_a_stride);

  // ---- the operand row being written into a buffer (lanes >= cols are 0) ---------------------
  always_comb begin
    for (int l = 0; l < DIM; l++) begin
      rd_lanes[l*8 +: 8] = (32'(l) < 32'(rd_cols)) ? sp_rdata[l*8 +: 8] : 8'd0;
    end
  end

  // ---- mesh feeds ----------------------------------------------------------------------------
  always_comb begin
    feed_a  = '0;
    feed_v  = '0;
    feed_c  = '0;
    m_shift = (st == S_LOAD) || (st == S_DRAIN);
    m_mac   = (st == S_STREAM) && !cfg_ws;
    if (st == S_STREAM) begin
      for (int q = 0; q < DIM; q++) begin
        for (int l = 0; l < DIM; l++) begin
          if (t == TW'(q + l)) feed_a[q*8 +: 8] = abuf[q*DIM + l];
          // column q, element (l, q) of Y enters at cycle l + q
          if (t == TW'(q + l)) feed_v[q*20 +: 20] = {{12{ybuf[l*DIM + q][7]}}, ybuf[l*DIM + q]};
        end
      end
    end
    if (st == S_LOAD) begin
      // shift s brings row D-1-s of the preload matrix in at the top
      for (int x = 0; x < DIM; x++) begin
        if (t == TW'(DIM - 1 - x)) begin
          for (int j = 0; j < DIM; j++) begin
            feed_c[j*20 +: 20] = {{12{xbuf[x*DIM + j][7]}}, xbuf[x*DIM + j]};
          end
        end
      end
    end
    if (st == S_DRAIN) feed_c = out_c;
  end

  // ---- write-back arithmetic -----------------------------------------------------------------
  logic [DIM*20-1:0] w1_row;
  logic [DIM*32-1:0] old_row;
  logic [5:0]        shamt;
  always_comb begin
    w1_row = '0;
    for (int x = 0; x < DIM; x++) begin
      for (int j = 0; j < DIM; j++) begin
        if (w1_i == CW'(x)) w1_row[j*20 +: 20] = rbuf[x*DIM + j];
      end
    end
    for (int l = 0; l < DIM; l++) begin
      old_row[l*32 +: 32] = (fwd_v && fwd_addr == ACA'(w1_addr) && fwd_mask[l]) ? fwd_data[l*32 +: 32]
                                                                                : acc_rdata[l*32 +: 32];
    end
    // sys_shift applies in OS only; any shift >= 20 gives 0 for a 20-bit value, as does 24
    shamt = cfg_ws ? 6'd0 : ((cfg_sys_shift > 32'd24) ? 6'd24 : 6'(cfg_sys_shift));
  end

  function automatic logic [7:0] shift_sat(input logic [19:0] v, input logic [5:0] s, input logic relu);
    logic signed [31:0] x, q, y;
    logic half, sticky;
    x = {{12{v[19]}}, v};
    if (s == 6'd0) begin
      y = x;
    end else begin
      q      = x >>> s;
      half   = x[5'(s - 6'd1)];
      sticky = (x & ((32'sd1 <<< (s - 6'd1)) - 32'sd1)) != 32'sd0;
      y      = q + {31'd0, half & (sticky | q[0])};
    end
    if (y > 32'sd127)       y = 32'sd127;
    else if (y < -32'sd128) y = -32'sd128;
    if (relu && y[31])      y = 32'sd0;
    shift_sat = y[7:0];
  endfunction

  logic [DIM-1:0] c_mask;
  always_comb begin
    for (int l = 0; l < DIM; l++) c_mask[l] = 32'(l) < 32'(c_cols);
  end

  // ---- memory ports --------------------------------------------------------------------------
  always_comb begin
    sp_re     = (st == S_READ) && (op_rows != 16'd0);
    sp_raddr  = ptr;
    acc_re    = (st == S_WB) && c_acc && c_accum;
    acc_raddr = ACA'(c_ptr);
    sp_we     = w1_v && !c_acc;
    sp_waddr  = SPA'(w1_addr);
    sp_wmask  = c_mask;
    acc_we    = w1_v && c_acc;
    acc_waddr = ACA'(w1_addr);
    acc_wmask = c_mask;
    for (int l = 0; l < DIM; l++) begin
      sp_wdata[l*8 +: 8]   = shift_sat(w1_row[l*20 +: 20], shamt, cfg_relu);
      acc_wdata[l*32 +: 32] = {{12{w1_row[l*20 + 19]}}, w1_row[l*20 +: 20]}
                              + (c_accum ? old_row[l*32 +: 32] : 32'd0);
    end
  end

  // ---- sequencer -----------------------------------------------------------------------------
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      st    <= S_IDLE;
      done  <= 1'b0;
      rd_v  <= 1'b0;
      w1_v  <= 1'b0;
      fwd_v <= 1'b0;
    end else begin
      done <= 1'b0;
      rd_v <= 1'b0;
      w1_v <= 1'b0;
      case (st)
        S_IDLE: if (start) begin
          a_garb  <= a_word[31:0] == GARBAGE;
          a_rows  <= a_word[63:48];
          a_cols  <= a_word[47:32];
          pre     <= preloaded;
          x_use   <= preloaded && (x_word[31:0] != GARBAGE);
          x_rows  <= x_word[63:48];
          x_cols  <= x_word[47:32];
          x_row0  <= SPA'(x_word[28:0]);
          y_garb  <= y_word[31:0] == GARBAGE;
          y_rows  <= y_word[63:48];
          y_cols  <= y_word[47:32];
          y_row0  <= SPA'(y_word[28:0]);
          c_garb  <= c_word[31:0] == GARBAGE;
          c_rows  <= c_word[63:48];
          c_cols  <= c_word[47:32];
          c_row0  <= c_word[28:0];
          c_acc   <= c_word[31];
          c_accum <= c_word[30];
          for (int k = 0; k < DIM*DIM; k++) begin
            abuf[k] <= '0;
            xbuf[k] <= '0;
            ybuf[k] <= '0;
          end
          op      <= 2'd0;
          r       <= '0;
          ptr     <= SPA'(a_word[28:0]);
          st      <= S_READ;
        end
        S_READ: begin
          if (op_rows != 16'd0) begin
            rd_v  <= 1'b1;
            rd_op <= op;
            rd_r  <= r;
            case (op)
              2'd0:    begin rd_cols <= a_cols; rd_colw <= cfg_ws ? !cfg_at : cfg_at; end
              2'd1:    begin rd_cols <= x_cols; rd_colw <= cfg_ws && cfg_bt; end
              default: begin rd_cols <= y_cols; rd_colw <= !cfg_ws && cfg_bt; end
            endcase
          end
          if (op_rows == 16'd0 || 16'(r) == op_rows - 16'd1) begin
            r  <= '0;
            op <= op + 2'd1;
            ptr <= (op == 2'd0) ? x_row0 : y_row0;
            if (op == 2'd2) st <= S_RWAIT;
          end else begin
            r   <= r + CW'(1);
            ptr <= ptr + ((op == 2'd0) ? a_stride_s : SPA'(1));
          end
        end
        S_RWAIT: begin
          t <= '0;
          if (pre) st <= S_LOAD;
          else if (cfg_ws && c_garb) begin st <= S_IDLE; done <= 1'b1; end
          else st <= S_STREAM;
        end
        S_LOAD: begin
          if (t == TW'(DIM - 1)) begin
            t <= '0;
            if (cfg_ws && c_garb) begin st <= S_IDLE; done <= 1'b1; end
            else st <= S_STREAM;
          end else t <= t + TW'(1);
        end
        S_STREAM: begin
          if (cfg_ws) begin
            for (int i = 0; i < DIM; i++) begin
              for (int j = 0; j < DIM; j++) begin
                if (t == TW'(i + DIM + j)) rbuf[i*DIM + j] <= out_v[j*20 +: 20];
              end
            end
          end
          if (t == TW'(3*DIM - 2)) begin
            t <= '0;
            if (c_garb) begin st <= S_IDLE; done <= 1'b1; end
            else if (cfg_ws) begin st <= S_WB; wi <= '0; c_ptr <= c_row0; end
            else st <= S_DRAIN;
          end else t <= t + TW'(1);
        end
        S_DRAIN: begin
          for (int x = 0; x < DIM; x++) begin
            for (int j = 0; j < DIM; j++) begin
              if (t == TW'(DIM - 1 - x)) rbuf[x*DIM + j] <= out_c[j*20 +: 20];
            end
          end
          if (t == TW'(DIM - 1)) begin
            t <= '0;
            st <= S_WB;
            wi <= '0;
            c_ptr <= c_row0;
          end else t <= t + TW'(1);
        end
        S_WB: begin
          w1_v    <= 1'b1;
          w1_i    <= wi;
          w1_addr <= c_ptr;
          c_ptr   <= c_ptr + 29'(cfg_c_stride);
          wi      <= wi + CW'(1);
          if (16'(wi) == c_rows - 16'd1) st <= S_WBWAIT;
        end
        S_WBWAIT: begin
          st   <= S_IDLE;
          done <= 1'b1;
        end
        default: st <= S_IDLE;
      endcase

      // operand row from the scratchpad into its buffer
      if (rd_v) begin
        for (int i = 0; i < DIM; i++) begin
          for (int j = 0; j < DIM; j++) begin
            if ((!rd_colw && rd_r == CW'(i)) || (rd_colw && rd_r == CW'(j))) begin
              case (rd_op)
                2'd0:    abuf[i*DIM + j] <= rd_lanes[(rd_colw ? i : j)*8 +: 8];
                2'd1:    xbuf[i*DIM + j] <= rd_lanes[(rd_colw ? i : j)*8 +: 8];
                default: ybuf[i*DIM + j] <= rd_lanes[(rd_colw ? i : j)*8 +: 8];
              endcase
            end
          end
        end
      end

      // the accumulator write of this cycle, for the next row's read-modify-write
      fwd_v    <= acc_we;
      fwd_addr <= acc_waddr;
      fwd_data <= acc_wdata;
      fwd_mask <= acc_wmask;
    end
  end

  logic unused;
  assign unused = &{1'b0, a_word[31:29], x_word[31:29], y_word[31:29]};
endmodule
