// Gemmini-ISA RTL: the execute unit (COMPUTE_PRELOADED / COMPUTE_ACCUMULATED) around the mesh.
//
// What belongs here: the pipeline of compute commands (operand reads from the scratchpad into
// buffer sets, preload of the stationary state, the skewed stream through the mesh, the OS
// read-out, the write of C) and the write-back arithmetic (20-bit result -> accumulator int32
// overwrite/accumulate, or -> scratchpad: rounding right shift (OS), saturate, ReLU).
//
// Commands arrive in program order (`start` while `ready`, with a `tag` that comes back on
// `done_a` or `done_b` when the command's last write is done). Stages (cycle counts for DIM = D):
//   READ    one cycle per row on three scratchpad read ports at once: A (a_rows rows, A_stride
//           apart), the latched preload matrix (compute_preloaded only) and the rs2 operand land
//           in one of NB buffer sets, as a row or, transposed, as a column; rows x cols bound the
//           operand as the array sees it (Spike's gemmini.cc), so a transposed operand reads cols
//           rows of rows lanes; the rest stays 0; GARBAGE -> 0. A command's operands are all read
//           before its C is written, so C may overlap A/B/D.
//   ISSUE   in order, per command kind:
//     WS with C: (compute_preloaded) the preload matrix is shifted into the mesh's shadow chain
//           (D cycles, while earlier commands still stream), then the command streams: mesh row q
//           receives buffer element (q, t-q) at cycle t (the A buffer holds A transposed: mesh
//           rows are the k index), column j receives bias element (t-j, j) at the top, and a
//           preloaded command's first row carries the flip that swaps in the shadow weights. A
//           stream starts D cycles after the previous one, so the mesh takes one DIM-row block
//           per D cycles; result (i, j) leaves column j's bottom at cycle i + D + j and a deskew
//           line aligns row i at cycle i + 2D - 1.
//     WS without C (preload only) and every OS command: wait until the mesh is empty, then run
//           alone: LOAD (D cycles shifting the preload matrix into the state chain), STREAM (OS:
//           3D - 1 cycles, every PE accumulates), DRAIN (OS: D cycles rotating the state chain
//           once around, reading the bottom row; the state is unchanged afterwards).
//   WB      a token per result row travels 2D - 1 cycles beside the data and writes row i to
//           C_addr + C_stride * i; accumulator writes with bit 30 read the old row one cycle
//           ahead and forward the previous write (C_stride 0 writes the same row again: every
//           row's result is added in turn). Rows are written in command order, so computes that
//           accumulate into the same rows need no wait between them.

module gemmini_ex #(
  parameter int DIM      = 16,
  parameter int SP_ROWS  = 16384,
  parameter int ACC_ROWS = 1024,
  parameter int TAGW     = 4,
  localparam int SPA = $clog2(SP_ROWS),
  localparam int ACA = $clog2(ACC_ROWS)
) (
  input  logic                  clk,
  input  logic                  rst_n,
  input  logic                  start,
  output logic                  ready,
  input  logic [TAGW-1:0]       tag,
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
  output logic                  done_a,        // a command's last row written
  output logic [TAGW-1:0]       done_a_tag,
  output logic                  done_b,        // a command without write-back finished
  output logic [TAGW-1:0]       done_b_tag,
  output logic                  empty,         // nothing in flight
  output logic [2:0]            sp_re,         // read ports: 0 A, 1 preload matrix, 2 rs2 operand
  output logic [3*SPA-1:0]      sp_raddr,
  input  logic [3*DIM*8-1:0]    sp_rdata,
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
  localparam int NB = 4;                        // buffer sets
  localparam int TL = 2 * DIM - 1;              // write-back token line
  localparam logic [31:0] GARBAGE = 32'hFFFF_FFFF;

  // ---- buffer sets and the command each holds ------------------------------------------------
  // element (i, j) of a set's DIM x DIM buffer at bits [(i*DIM + j)*8 +: 8]
  (* mem2reg *) logic [DIM*DIM*8-1:0] abuf [NB];
  (* mem2reg *) logic [DIM*DIM*8-1:0] xbuf [NB];
  (* mem2reg *) logic [DIM*DIM*8-1:0] ybuf [NB];
  logic [NB-1:0]   set_busy;
  (* mem2reg *) logic            d_pre [NB];
  (* mem2reg *) logic            d_ws [NB];
  (* mem2reg *) logic            d_relu [NB];
  (* mem2reg *) logic            d_cgarb [NB];
  (* mem2reg *) logic            d_cacc [NB];
  (* mem2reg *) logic            d_caccum [NB];
  (* mem2reg *) logic [15:0]     d_crows [NB];
  (* mem2reg *) logic [15:0]     d_ccols [NB];
  (* mem2reg *) logic [28:0]     d_crow0 [NB];
  (* mem2reg *) logic [15:0]     d_cstride [NB];
  (* mem2reg *) logic [5:0]      d_shamt [NB];
  (* mem2reg *) logic [TAGW-1:0] d_tag [NB];

  // ---- READ stage ----------------------------------------------------------------------------
  logic           r_busy;
  logic [1:0]     r_set;
  (* mem2reg *) logic [15:0]    r_n [3];         // rows per port
  (* mem2reg *) logic [15:0]    r_cols [3];
  (* mem2reg *) logic           r_colw [3];
  (* mem2reg *) logic [SPA-1:0] r_ptr [3];
  (* mem2reg *) logic [SPA-1:0] r_step [3];
  logic [15:0]    r_i;
  logic           r_lastc;         // this is the READ's last cycle
  logic [2:0]     rd_v;
  logic [CW-1:0]  rd_r;
  logic [1:0]     rd_set;
  (* mem2reg *) logic           rd_colw [3];
  (* mem2reg *) logic [15:0]    rd_cols [3];
  logic           r_fin;           // the READ's last rows land this cycle: queue the command
  logic [1:0]     r_fin_set;
  logic [1:0]     free_set;
  logic           have_free;

  always_comb begin
    have_free = 1'b0;
    free_set  = '0;
    for (int b = NB - 1; b >= 0; b--) begin
      if (!set_busy[b]) begin
        have_free = 1'b1;
        free_set  = 2'(b);
      end
    end
  end
  assign r_lastc = r_busy && r_i + 16'd1 >= r_n[0] && r_i + 16'd1 >= r_n[1] && r_i + 16'd1 >= r_n[2];
  // a new command may start in the last READ cycle of the previous one
  assign ready = (!r_busy || r_lastc) && have_free;

  // ---- the queue of read commands (their sets), in order -------------------------------------
  (* mem2reg *) logic [1:0]     pq [NB];
  logic [2:0]     pq_n;
  logic [1:0]     h;                // the head command's set
  assign h = pq[0];

  // ---- mesh ----------------------------------------------------------------------------------
  logic                 m_ws, m_shift, m_mac, m_sshift;
  logic [DIM*8-1:0]     feed_a;
  logic [DIM-1:0]       feed_f;
  logic [DIM*20-1:0]    feed_v, feed_c, feed_s, out_v, out_c;

  gemmini_mesh #(.DIM(DIM)) u_mesh (
    .clk(clk), .rst_n(rst_n), .ws(m_ws), .shift(m_shift), .mac(m_mac), .sshift(m_sshift),
    .feed_a(feed_a), .feed_f(feed_f), .feed_v(feed_v), .feed_c(feed_c), .feed_s(feed_s),
    .out_v(out_v), .out_c(out_c), .state(pe_state)
  );

  // ---- ISSUE stage ---------------------------------------------------------------------------
  localparam logic [2:0] I_IDLE = 3'd0, I_SLOAD = 3'd1, I_WAIT = 3'd2, I_CLOAD = 3'd3, I_OSTREAM = 3'd4,
                         I_DRAIN = 3'd5, I_OSWB = 3'd6;
  logic [2:0]     ist;
  logic [TW-1:0]  it;
  logic [1:0]     os_set;
  // two stream slots (WS streams start >= D cycles apart and last 2D - 1 cycles)
  (* mem2reg *) logic           sl_v [2];
  (* mem2reg *) logic [TW-1:0]  sl_t [2];
  (* mem2reg *) logic [1:0]     sl_set [2];
  (* mem2reg *) logic           sl_flip [2];
  logic           sl_last;          // the slot of the most recent stream
  logic [TW-1:0]  flip_age;         // cycles since the last preloaded stream started (saturating)
  logic           flip_seen;
  logic [DIM*DIM*20-1:0] rbuf;   // OS results, element (i, j) at bits [(i*DIM + j)*20 +: 20]

  // ---- write-back token line -----------------------------------------------------------------
  (* mem2reg *) logic            tk_v [TL];
  (* mem2reg *) logic            tk_last [TL];
  (* mem2reg *) logic            tk_wr [TL];
  (* mem2reg *) logic            tk_os [TL];
  (* mem2reg *) logic [CW-1:0]   tk_row [TL];
  (* mem2reg *) logic [28:0]     tk_addr [TL];
  (* mem2reg *) logic            tk_acc [TL];
  (* mem2reg *) logic            tk_accum [TL];
  (* mem2reg *) logic [DIM-1:0]  tk_mask [TL];
  (* mem2reg *) logic            tk_relu [TL];
  (* mem2reg *) logic [5:0]      tk_shamt [TL];
  (* mem2reg *) logic [TAGW-1:0] tk_tag [TL];
  // the token entering this cycle
  logic            in_v, in_last, in_wr, in_os;
  logic [CW-1:0]   in_row;
  logic [1:0]      in_set;
  logic [28:0]     in_addr, ins_ptr;  // this token's C row; the last token's
  (* mem2reg *) logic [19:0]     dsk [DIM][DIM];   // column j delayed D - 1 - j cycles
  logic            tok_any;

  always_comb begin
    tok_any = 1'b0;
    for (int k = 0; k < TL; k++) tok_any = tok_any | tk_v[k];
  end

  logic head_v, h_pre, h_ws, h_cgarb;
  assign head_v  = pq_n != 3'd0;
  assign h_pre   = d_pre[h];
  assign h_ws    = d_ws[h];
  assign h_cgarb = d_cgarb[h];
  logic mesh_idle;
  assign mesh_idle = !sl_v[0] && !sl_v[1] && !tok_any;
  assign empty = !r_busy && !r_fin && pq_n == 3'd0 && ist == I_IDLE && mesh_idle;

  // a WS stream may start now: the previous one started >= D cycles ago
  logic slot_ok;
  assign slot_ok = !sl_v[sl_last] || sl_t[sl_last] >= TW'(DIM - 1);
  // the shadow chain may be overwritten: every PE has taken the last flip
  logic shadow_ok;
  assign shadow_ok = !flip_seen || flip_age >= TW'(2 * DIM - 2);

  function automatic logic [19:0] sx8(input logic [7:0] v);
    sx8 = {{12{v[7]}}, v};
  endfunction

  // ---- mesh feeds ----------------------------------------------------------------------------
  // the buffers each feed reads: the stream slots' sets, the OS / LOAD command's set
  (* mem2reg *) logic [DIM*DIM*8-1:0] fa [2], fy [2];
  logic [DIM*DIM*8-1:0] oa, oy, hx;
  always_comb begin
    for (int s = 0; s < 2; s++) begin
      fa[s] = abuf[sl_set[s]];
      fy[s] = ybuf[sl_set[s]];
    end
    oa = abuf[os_set];
    oy = ybuf[os_set];
    hx = xbuf[h];
  end

  always_comb begin
    feed_a   = '0;
    feed_f   = '0;
    feed_v   = '0;
    feed_c   = '0;
    feed_s   = '0;
    m_ws     = !(ist == I_OSTREAM || ist == I_DRAIN || (ist == I_CLOAD && !d_ws[os_set]));
    m_shift  = (ist == I_CLOAD) || (ist == I_DRAIN);
    m_mac    = ist == I_OSTREAM;
    m_sshift = ist == I_SLOAD;
    for (int s = 0; s < 2; s++) begin
      if (sl_v[s]) begin
        for (int q = 0; q < DIM; q++) begin
          for (int l = 0; l < DIM; l++) begin
            if (sl_t[s] == TW'(q + l)) begin
              feed_a[q*8 +: 8]   = fa[s][(q*DIM + l)*8 +: 8];
              // column q, element (l, q) of the rs2 operand enters at cycle l + q
              feed_v[q*20 +: 20] = sx8(fy[s][(l*DIM + q)*8 +: 8]);
            end
          end
          if (sl_flip[s] && sl_t[s] == TW'(q)) feed_f[q] = 1'b1;
        end
      end
    end
    if (ist == I_OSTREAM) begin
      for (int q = 0; q < DIM; q++) begin
        for (int l = 0; l < DIM; l++) begin
          if (it == TW'(q + l)) begin
            feed_a[q*8 +: 8]   = oa[(q*DIM + l)*8 +: 8];
            feed_v[q*20 +: 20] = sx8(oy[(l*DIM + q)*8 +: 8]);
          end
        end
      end
    end
    // LOAD: shift s brings row D-1-s of the preload matrix in at the top
    if (ist == I_SLOAD || ist == I_CLOAD) begin
      for (int x = 0; x < DIM; x++) begin
        if (it == TW'(DIM - 1 - x)) begin
          for (int j = 0; j < DIM; j++) begin
            feed_s[j*20 +: 20] = sx8(hx[(x*DIM + j)*8 +: 8]);
          end
        end
      end
      feed_c = feed_s;
    end
    if (ist == I_DRAIN) feed_c = out_c;
  end

  // ---- write-back arithmetic (the token leaving the line) --------------------------------------
  localparam int TX = TL - 1;
  logic [DIM*20-1:0] w1_row;
  logic [DIM*32-1:0] old_row;
  logic              fwd_v;
  logic [ACA-1:0]    fwd_addr;
  logic [DIM*32-1:0] fwd_data;
  logic [DIM-1:0]    fwd_mask;

  always_comb begin
    for (int j = 0; j < DIM; j++) begin
      if (j == DIM - 1) w1_row[j*20 +: 20] = out_v[j*20 +: 20];
      else              w1_row[j*20 +: 20] = dsk[j][DIM - 2 - j];
    end
    if (tk_os[TX]) begin
      for (int x = 0; x < DIM; x++) begin
        for (int j = 0; j < DIM; j++) begin
          if (tk_row[TX] == CW'(x)) w1_row[j*20 +: 20] = rbuf[(x*DIM + j)*20 +: 20];
        end
      end
    end
    for (int l = 0; l < DIM; l++) begin
      old_row[l*32 +: 32] = (fwd_v && fwd_addr == ACA'(tk_addr[TX]) && fwd_mask[l]) ? fwd_data[l*32 +: 32]
                                                                                   : acc_rdata[l*32 +: 32];
    end
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

  // lane x of the row read on port p (lanes >= cols are 0)
  function automatic logic [7:0] lane(input int p, input int x);
    lane = (x < 32'(rd_cols[p])) ? sp_rdata[p*DIM*8 + x*8 +: 8] : 8'd0;
  endfunction

  // a buffer set after port p's row lands: row rd_r of the buffer, or (transposed) its column
  // rd_r, holds lane x of the read row
  (* mem2reg *) logic [DIM*DIM*8-1:0] wr_word [3];
  always_comb begin
    logic [DIM*DIM*8-1:0] cur;
    for (int p = 0; p < 3; p++) begin
      case (p)
        0:       cur = abuf[rd_set];
        1:       cur = xbuf[rd_set];
        default: cur = ybuf[rd_set];
      endcase
      for (int i = 0; i < DIM; i++) begin
        for (int j = 0; j < DIM; j++) begin
          if ((!rd_colw[p] && rd_r == CW'(i)) || (rd_colw[p] && rd_r == CW'(j)))
            cur[(i*DIM + j)*8 +: 8] = lane(p, rd_colw[p] ? i : j);
        end
      end
      wr_word[p] = cur;
    end
  end

  // ---- memory ports --------------------------------------------------------------------------
  always_comb begin
    for (int p = 0; p < 3; p++) begin
      sp_re[p]                = r_busy && (r_i < r_n[p]);
      sp_raddr[p*SPA +: SPA]  = r_ptr[p];
    end
    acc_re    = tk_v[TX-1] && tk_wr[TX-1] && tk_acc[TX-1] && tk_accum[TX-1];
    acc_raddr = ACA'(tk_addr[TX-1]);
    sp_we     = tk_v[TX] && tk_wr[TX] && !tk_acc[TX];
    sp_waddr  = SPA'(tk_addr[TX]);
    sp_wmask  = tk_mask[TX];
    acc_we    = tk_v[TX] && tk_wr[TX] && tk_acc[TX];
    acc_waddr = ACA'(tk_addr[TX]);
    acc_wmask = tk_mask[TX];
    for (int l = 0; l < DIM; l++) begin
      sp_wdata[l*8 +: 8]    = shift_sat(w1_row[l*20 +: 20], tk_shamt[TX], tk_relu[TX]);
      acc_wdata[l*32 +: 32] = {{12{w1_row[l*20 + 19]}}, w1_row[l*20 +: 20]}
                              + (tk_accum[TX] ? old_row[l*32 +: 32] : 32'd0);
    end
    done_a     = tk_v[TX] && tk_last[TX];
    done_a_tag = tk_tag[TX];
  end

  // the token of this cycle: a WS slot feeding its row t < D, or the OS write-back phase
  always_comb begin
    in_v = 1'b0; in_last = 1'b0; in_wr = 1'b0; in_os = 1'b0; in_row = '0; in_set = '0;
    for (int s = 0; s < 2; s++) begin
      if (sl_v[s] && sl_t[s] < TW'(DIM)) begin
        in_v = 1'b1; in_os = 1'b0; in_row = CW'(sl_t[s]); in_set = sl_set[s];
        in_last = sl_t[s] == TW'(DIM - 1);
      end
    end
    if (ist == I_OSWB) begin
      in_v = 1'b1; in_os = 1'b1; in_row = CW'(it); in_set = os_set;
      in_last = it == TW'(DIM - 1);
    end
    in_wr = in_v && !d_cgarb[in_set] && 16'(in_row) < d_crows[in_set];
    // row i of C at C_addr + C_stride * i: the previous token's address plus the stride
    in_addr = (in_row == '0) ? d_crow0[in_set] : ins_ptr + 29'(d_cstride[in_set]);
  end

  // ---- sequencer -----------------------------------------------------------------------------
  always_ff @(posedge clk) begin : seq
    logic pop;
    pop = 1'b0;
    if (!rst_n) begin
      set_busy  <= '0;
      r_busy    <= 1'b0;
      r_fin     <= 1'b0;
      rd_v      <= '0;
      pq_n      <= '0;
      ist       <= I_IDLE;
      sl_v[0]   <= 1'b0;
      sl_v[1]   <= 1'b0;
      sl_last   <= 1'b0;
      flip_seen <= 1'b0;
      done_b    <= 1'b0;
      fwd_v     <= 1'b0;
      for (int k = 0; k < TL; k++) tk_v[k] <= 1'b0;
    end else begin
      done_b <= 1'b0;
      rd_v   <= '0;
      r_fin  <= 1'b0;

      // -- READ: one row per port per cycle; the rows land in the buffer the next cycle
      if (r_busy) begin
        for (int p = 0; p < 3; p++) begin
          if (r_i < r_n[p]) begin
            rd_v[p]  <= 1'b1;
            r_ptr[p] <= r_ptr[p] + r_step[p];
          end
          rd_colw[p] <= r_colw[p];
          rd_cols[p] <= r_cols[p];
        end
        rd_r   <= CW'(r_i);
        rd_set <= r_set;
        r_i    <= r_i + 16'd1;
        if (r_lastc) begin
          r_busy    <= 1'b0;
          r_fin     <= 1'b1;
          r_fin_set <= r_set;
        end
      end
      if (rd_v[0]) abuf[rd_set] <= wr_word[0];
      if (rd_v[1]) xbuf[rd_set] <= wr_word[1];
      if (rd_v[2]) ybuf[rd_set] <= wr_word[2];

      // -- accept a command: decode its words, take a buffer set, start its READ
      if (start) begin
        r_busy <= 1'b1;
        r_set  <= free_set;
        set_busy[free_set] <= 1'b1;
        r_i    <= '0;
        d_pre[free_set]     <= preloaded;
        d_ws[free_set]      <= cfg_ws;
        d_relu[free_set]    <= cfg_relu;
        d_cgarb[free_set]   <= c_word[31:0] == GARBAGE;
        d_cacc[free_set]    <= c_word[31];
        d_caccum[free_set]  <= c_word[30];
        d_crows[free_set]   <= c_word[63:48];
        d_ccols[free_set]   <= c_word[47:32];
        d_crow0[free_set]   <= c_word[28:0];
        d_cstride[free_set] <= cfg_c_stride;
        // sys_shift applies in OS only; any shift >= 20 gives 0 for a 20-bit value, as does 24
        d_shamt[free_set]   <= cfg_ws ? 6'd0 : ((cfg_sys_shift > 32'd24) ? 6'd24 : 6'(cfg_sys_shift));
        d_tag[free_set]     <= tag;
        // rows x cols bound an operand as the array sees it (Spike's gemmini.cc): a transposed
        // operand (A with A_transpose; the WS preload or the OS B with B_transpose) reads cols
        // scratchpad rows of rows lanes each
        r_n[0]    <= (a_word[31:0] == GARBAGE) ? 16'd0 : (cfg_at ? a_word[47:32] : a_word[63:48]);
        r_n[1]    <= (preloaded && x_word[31:0] != GARBAGE) ? ((cfg_ws && cfg_bt) ? x_word[47:32] : x_word[63:48])
                                                           : 16'd0;
        r_n[2]    <= (y_word[31:0] == GARBAGE) ? 16'd0 : ((!cfg_ws && cfg_bt) ? y_word[47:32] : y_word[63:48]);
        r_cols[0] <= cfg_at ? a_word[63:48] : a_word[47:32];
        r_cols[1] <= (cfg_ws && cfg_bt) ? x_word[63:48] : x_word[47:32];
        r_cols[2] <= (!cfg_ws && cfg_bt) ? y_word[63:48] : y_word[47:32];
        r_colw[0] <= cfg_ws ? !cfg_at : cfg_at;
        r_colw[1] <= cfg_ws && cfg_bt;
        r_colw[2] <= !cfg_ws && cfg_bt;
        r_ptr[0]  <= SPA'(a_word[28:0]);
        r_ptr[1]  <= SPA'(x_word[28:0]);
        r_ptr[2]  <= SPA'(y_word[28:0]);
        r_step[0] <= SPA'(cfg_a_stride);
        r_step[1] <= SPA'(1);
        r_step[2] <= SPA'(1);
        abuf[free_set] <= '0;
        xbuf[free_set] <= '0;
        ybuf[free_set] <= '0;
      end

      // -- stream slots advance; a slot ends after 2D - 1 cycles and frees its set
      for (int s = 0; s < 2; s++) begin
        if (sl_v[s]) begin
          if (sl_t[s] == TW'(2 * DIM - 2)) begin
            sl_v[s] <= 1'b0;
            set_busy[sl_set[s]] <= 1'b0;
          end else sl_t[s] <= sl_t[s] + TW'(1);
        end
      end
      if (flip_seen && flip_age != TW'(2 * DIM)) flip_age <= flip_age + TW'(1);

      // -- ISSUE: the head of the queue
      case (ist)
        I_IDLE: if (head_v) begin
          if (h_ws && !h_cgarb) begin
            if (h_pre) begin
              if (shadow_ok) begin ist <= I_SLOAD; it <= '0; end
            end else ist <= I_WAIT;
          end else if (h_ws && !h_pre) begin          // neither weights nor C: nothing to do
            done_b <= 1'b1;  done_b_tag <= d_tag[h];
            set_busy[h] <= 1'b0;
            pop = 1'b1;
          end else if (mesh_idle) begin                 // WS preload only, or OS: alone
            os_set <= h;
            it <= '0;
            ist <= h_pre ? I_CLOAD : I_OSTREAM;
          end
        end
        I_SLOAD: begin
          if (it == TW'(DIM - 1)) ist <= I_WAIT;
          else it <= it + TW'(1);
        end
        I_WAIT: if (slot_ok) begin
          sl_v[!sl_last]    <= 1'b1;
          sl_t[!sl_last]    <= '0;
          sl_set[!sl_last]  <= h;
          sl_flip[!sl_last] <= h_pre;
          sl_last           <= !sl_last;
          if (h_pre) begin flip_seen <= 1'b1; flip_age <= '0; end
          ist <= I_IDLE;
          pop = 1'b1;
        end
        I_CLOAD: begin
          if (it == TW'(DIM - 1)) begin
            it <= '0;
            if (d_ws[os_set]) begin                      // WS preload only: done
              ist <= I_IDLE;
              done_b <= 1'b1;  done_b_tag <= d_tag[os_set];
              set_busy[os_set] <= 1'b0;
              pop = 1'b1;
            end else ist <= I_OSTREAM;
          end else it <= it + TW'(1);
        end
        I_OSTREAM: begin
          if (it == TW'(3 * DIM - 2)) begin
            it <= '0;
            if (d_cgarb[os_set]) begin
              ist <= I_IDLE;
              done_b <= 1'b1;  done_b_tag <= d_tag[os_set];
              set_busy[os_set] <= 1'b0;
              pop = 1'b1;
            end else ist <= I_DRAIN;
          end else it <= it + TW'(1);
        end
        I_DRAIN: begin
          for (int x = 0; x < DIM; x++) begin
            for (int j = 0; j < DIM; j++) begin
              if (it == TW'(DIM - 1 - x)) rbuf[(x*DIM + j)*20 +: 20] <= out_c[j*20 +: 20];
            end
          end
          if (it == TW'(DIM - 1)) begin it <= '0; ist <= I_OSWB; end
          else it <= it + TW'(1);
        end
        I_OSWB: begin
          if (it == TW'(DIM - 1)) begin
            it <= '0;
            ist <= I_IDLE;
            set_busy[os_set] <= 1'b0;
            pop = 1'b1;
          end else it <= it + TW'(1);
        end
        default: ist <= I_IDLE;
      endcase

      // -- the queue: pop the head, push the command whose READ ends
      if (pop) begin
        for (int k = 0; k < NB - 1; k++) pq[k] <= pq[k+1];
      end
      if (r_fin) pq[2'(pq_n - {2'd0, pop})] <= r_fin_set;
      pq_n <= pq_n - {2'd0, pop} + {2'd0, r_fin};

      // -- token line
      tk_v[0]     <= in_v;
      tk_last[0]  <= in_last;
      tk_wr[0]    <= in_wr;
      tk_os[0]    <= in_os;
      tk_row[0]   <= in_row;
      tk_addr[0]  <= in_addr;
      if (in_v) ins_ptr <= in_addr;
      tk_acc[0]   <= d_cacc[in_set];
      tk_accum[0] <= d_cacc[in_set] && d_caccum[in_set];
      for (int l = 0; l < DIM; l++) tk_mask[0][l] <= 32'(l) < 32'(d_ccols[in_set]);
      tk_relu[0]  <= d_relu[in_set];
      tk_shamt[0] <= d_shamt[in_set];
      tk_tag[0]   <= d_tag[in_set];
      for (int k = 1; k < TL; k++) begin
        tk_v[k] <= tk_v[k-1];  tk_last[k] <= tk_last[k-1];  tk_wr[k] <= tk_wr[k-1];  tk_os[k] <= tk_os[k-1];
        tk_row[k] <= tk_row[k-1];  tk_addr[k] <= tk_addr[k-1];  tk_acc[k] <= tk_acc[k-1];
        tk_accum[k] <= tk_accum[k-1];  tk_mask[k] <= tk_mask[k-1];  tk_relu[k] <= tk_relu[k-1];
        tk_shamt[k] <= tk_shamt[k-1];  tk_tag[k] <= tk_tag[k-1];
      end
      for (int j = 0; j < DIM; j++) begin
        dsk[j][0] <= out_v[j*20 +: 20];
        for (int k = 1; k < DIM; k++) dsk[j][k] <= dsk[j][k-1];
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
