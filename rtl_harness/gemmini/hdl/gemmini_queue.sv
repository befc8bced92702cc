// Gemmini-ISA RTL: the command queue (Gemmini's reservation station) of gemmini_top.
//
// What belongs here: Q entries of MVIN*, MVOUT and COMPUTE_* commands in program order, each
// with the configuration it was issued under and the ranges it reads and writes (decoded once
// on entry); the choice, per unit, of its oldest waiting command and the dependency check that
// lets it start; completion by tag and in-order retirement.
//
// Ranges are [lo, hi) (SPA + 1 / ACA + 1 / 64 bits) of scratchpad rows, accumulator rows and DRAM bytes, a superset of what
// the command touches (a range that would wrap around a memory is the whole memory):
//   MVIN    writes rows row0 .. row0 + (blocks - 1) * block_stride + rows in the scratchpad or
//           the accumulator (and reads them when it accumulates); reads DRAM from rs1 over
//           (rows - 1) * stride + blocks * block bytes (none when rs1 = 0: zeros);
//   MVOUT   reads rows row0 .. row0 + rows; writes DRAM from rs1 over (rows - 1) * stride + the
//           bytes of one row;
//   COMPUTE reads the scratchpad rows of A (a_rows, A_stride apart; a_cols when transposed), of
//           the preload matrix (compute_preloaded) and of the rs2 operand (cols rows when
//           transposed); writes the rows of C (c_rows, C_stride
//           apart) in the scratchpad or the accumulator (and reads them when it accumulates).
// A command may start when no older unfinished command writes what it reads or writes, or
// reads what it writes. Two loads or two stores are ordered by their unit (one at a time); two
// computes by the execute unit (in-order write-back), except a read of scratchpad rows that an
// older compute writes. (The load unit may run two loads at once, one issuing and one writing;
// its writes stay in order.)
//
// Configuration word of an entry (192 bits; 0 elsewhere):
//   MVIN    [64] shrunk, [95:80] block_stride, [127:96] scale, [191:128] stride
//   MVOUT   [95:64] stride, [127:96] scale, [128] relu
//   COMPUTE [64] B_transpose, [65] A_transpose, [66] relu, [67] WS, [68] preloaded,
//           [111:96] A_stride, [127:112] C_stride, [159:128] sys_shift

module gemmini_queue #(
  parameter int DIM      = 16,
  parameter int SP_ROWS  = 16384,
  parameter int ACC_ROWS = 1024,
  parameter int Q        = 16,
  localparam int TAGW = $clog2(Q),
  localparam int SPA = $clog2(SP_ROWS),
  localparam int ACA = $clog2(ACC_ROWS)
) (
  input  logic             clk,
  input  logic             rst_n,
  output logic             full,
  output logic             busy,
  input  logic             enq,
  input  logic [1:0]       enq_unit,          // 1 load, 2 store, 3 execute
  input  logic [63:0]      enq_rs1,
  input  logic [63:0]      enq_rs2,
  input  logic [63:0]      enq_x,             // the preload latch (computes)
  input  logic [63:0]      enq_c,
  input  logic [191:0]     enq_cfg,
  input  logic             ld_free,
  input  logic             st_free,
  input  logic             ex_free,
  output logic             ld_go,
  output logic             st_go,
  output logic             ex_go,
  output logic [TAGW-1:0]  ld_tag,
  output logic [TAGW-1:0]  st_tag,
  output logic [TAGW-1:0]  ex_tag,
  output logic [63:0]      ld_rs1,
  output logic [63:0]      ld_rs2,
  output logic [191:0]     ld_cfg,
  output logic [63:0]      st_rs1,
  output logic [63:0]      st_rs2,
  output logic [191:0]     st_cfg,
  output logic [63:0]      ex_rs1,
  output logic [63:0]      ex_rs2,
  output logic [63:0]      ex_x,
  output logic [63:0]      ex_c,
  output logic [191:0]     ex_cfg,
  input  logic             ld_done,
  input  logic [TAGW-1:0]  ld_done_tag,
  input  logic             st_done,
  input  logic             ex_done_a,
  input  logic [TAGW-1:0]  ex_done_a_tag,
  input  logic             ex_done_b,
  input  logic [TAGW-1:0]  ex_done_b_tag
);
  localparam logic [31:0] GARBAGE = 32'hFFFF_FFFF;
  localparam logic [1:0]  U_LD = 2'd1, U_ST = 2'd2, U_EX = 2'd3;

  // ---- entries -------------------------------------------------------------------------------
  (* mem2reg *) logic            e_v [Q];
  (* mem2reg *) logic [1:0]      e_unit [Q];
  (* mem2reg *) logic            e_iss [Q];
  (* mem2reg *) logic            e_done [Q];
  (* mem2reg *) logic [63:0]     e_rs1 [Q], e_rs2 [Q], e_x [Q], e_c [Q];
  (* mem2reg *) logic [191:0]    e_cfg [Q];
  // ranges: three scratchpad reads (COMPUTE: A, preload, rs2; MVOUT: 0), one scratchpad write,
  // accumulator read / write, DRAM read / write
  (* mem2reg *) logic [SPA:0]    spr_lo [Q][3], spr_hi [Q][3], spw_lo [Q], spw_hi [Q];
  (* mem2reg *) logic [ACA:0]    acr_lo [Q], acr_hi [Q], acw_lo [Q], acw_hi [Q];
  (* mem2reg *) logic [63:0]     drr_lo [Q], drr_hi [Q], drw_lo [Q], drw_hi [Q];

  logic [TAGW-1:0] head, tail, st_cur;
  logic [TAGW:0]   count;

  assign full = count == (TAGW+1)'(Q);
  assign busy = count != '0;

  // ---- range decoding ------------------------------------------------------------------------
  // local rows: [start mod size, + span), the whole memory when it would wrap; span 0 = none
  function automatic logic [63:0] lrange(input logic [28:0] row0, input logic [63:0] span, input int size);
    logic [63:0] s;
    s = 64'(row0) & 64'(size - 1);
    if (span == 64'd0)                 lrange = 64'd0;
    else if (s + span > 64'(size) || span > 64'(size)) lrange = {32'(size), 32'd0};
    else                               lrange = {32'(s + span), 32'(s)};
  endfunction

  // DRAM bytes: [base, base + span) (span already checked below 2^64), all of it when it wraps
  function automatic logic [127:0] drange(input logic [63:0] base, input logic [127:0] span);
    logic [127:0] e;
    e = {64'd0, base} + span;
    if (span == 128'd0)           drange = 128'd0;
    else if (e[127:64] != 64'd0)  drange = {64'hFFFF_FFFF_FFFF_FFFF, 64'd0};
    else                          drange = {e[63:0], base};
  endfunction

  (* mem2reg *) logic [63:0]  n_spr [3];   // {hi, lo}
  logic [63:0]  n_spw, n_acr, n_acw;
  logic [127:0] n_drr, n_drw;
  always_comb begin
    logic [15:0]  rows, cols, nb, a_rows, x_rows, y_rows, c_rows;
    logic         is_acc, accum, eb4;
    logic [63:0]  lspan;
    logic [127:0] dspan;
    eb4 = 1'b0;  lspan = '0;  dspan = '0;  a_rows = '0;  x_rows = '0;  y_rows = '0;  c_rows = '0;
    for (int p = 0; p < 3; p++) n_spr[p] = '0;
    n_spw = '0;  n_acr = '0;  n_acw = '0;  n_drr = '0;  n_drw = '0;
    rows   = enq_rs2[63:48];
    cols   = enq_rs2[47:32];
    nb     = 16'((32'(cols) + DIM - 1) / DIM);
    is_acc = enq_rs2[31];
    accum  = enq_rs2[31] && enq_rs2[30];
    case (enq_unit)
      U_LD: begin
        eb4 = is_acc && !enq_cfg[64];
        if (rows != 16'd0 && nb != 16'd0) begin
          lspan = 64'(nb - 16'd1) * 64'(enq_cfg[95:80]) + 64'(rows);
          if (is_acc) begin
            n_acw = lrange(enq_rs2[28:0], lspan, ACC_ROWS);
            if (accum) n_acr = n_acw;
          end else n_spw = lrange(enq_rs2[28:0], lspan, SP_ROWS);
          if (enq_rs1 != 64'd0) begin
            dspan = 128'(rows - 16'd1) * 128'(enq_cfg[191:128]) + 128'(nb) * (eb4 ? 128'(4 * DIM) : 128'(DIM));
            n_drr = drange(enq_rs1, dspan);
          end
        end
      end
      U_ST: begin
        if (rows != 16'd0) begin
          if (is_acc) n_acr = lrange(enq_rs2[28:0], 64'(rows), ACC_ROWS);
          else        n_spr[0] = lrange(enq_rs2[28:0], 64'(rows), SP_ROWS);
          dspan = 128'(rows - 16'd1) * 128'(enq_cfg[95:64])
                  + ((is_acc && enq_rs2[29]) ? 128'(4) * 128'(cols) : 128'(cols));
          n_drw = drange(enq_rs1, dspan);
        end
      end
      U_EX: begin
        // scratchpad rows read: a transposed operand (rows x cols as the array sees it, Spike's
        // gemmini.cc) reads cols rows
        a_rows = enq_cfg[65] ? enq_rs1[47:32] : enq_rs1[63:48];
        x_rows = (enq_cfg[67] && enq_cfg[64]) ? enq_x[47:32] : enq_x[63:48];
        y_rows = (!enq_cfg[67] && enq_cfg[64]) ? enq_rs2[47:32] : enq_rs2[63:48];
        c_rows = enq_c[63:48];
        if (enq_rs1[31:0] != GARBAGE && a_rows != 16'd0)
          n_spr[0] = lrange(enq_rs1[28:0], 64'(a_rows - 16'd1) * 64'(enq_cfg[111:96]) + 64'd1, SP_ROWS);
        if (enq_cfg[68] && enq_x[31:0] != GARBAGE && x_rows != 16'd0)
          n_spr[1] = lrange(enq_x[28:0], 64'(x_rows), SP_ROWS);
        if (enq_rs2[31:0] != GARBAGE && y_rows != 16'd0)
          n_spr[2] = lrange(enq_rs2[28:0], 64'(y_rows), SP_ROWS);
        if (enq_c[31:0] != GARBAGE && c_rows != 16'd0) begin
          lspan = 64'(c_rows - 16'd1) * 64'(enq_cfg[127:112]) + 64'd1;
          if (enq_c[31]) begin
            n_acw = lrange(enq_c[28:0], lspan, ACC_ROWS);
            if (enq_c[30]) n_acr = n_acw;
          end else n_spw = lrange(enq_c[28:0], lspan, SP_ROWS);
        end
      end
      default: ;
    endcase
  end

  // ---- dependency check ----------------------------------------------------------------------
  function automatic logic ovsp(input logic [SPA:0] alo, input logic [SPA:0] ahi, input logic [SPA:0] blo,
                                input logic [SPA:0] bhi);
    ovsp = alo < bhi && blo < ahi;
  endfunction
  function automatic logic ovac(input logic [ACA:0] alo, input logic [ACA:0] ahi, input logic [ACA:0] blo,
                                input logic [ACA:0] bhi);
    ovac = alo < bhi && blo < ahi;
  endfunction
  function automatic logic ov64(input logic [63:0] alo, input logic [63:0] ahi, input logic [63:0] blo,
                                input logic [63:0] bhi);
    ov64 = alo < bhi && blo < ahi;
  endfunction

  // the candidates' ranges
  (* mem2reg *) logic [SPA:0] c_spr_lo [4][3], c_spr_hi [4][3], c_spw_lo [4], c_spw_hi [4];
  (* mem2reg *) logic [ACA:0] c_acr_lo [4], c_acr_hi [4], c_acw_lo [4], c_acw_hi [4];
  (* mem2reg *) logic [63:0] c_drr_lo [4], c_drr_hi [4], c_drw_lo [4], c_drw_hi [4];

  // the oldest waiting entry of each unit (age = position after the head), and whether an older
  // unfinished entry blocks it
  (* mem2reg *) logic            found [4];
  (* mem2reg *) logic [TAGW-1:0] cand [4];
  (* mem2reg *) logic [TAGW:0]   cand_k [4];
  (* mem2reg *) logic            blocked [4];
  // an older entry o keeps the candidate of unit u (its ranges muxed into c_*) from starting
  // when it writes what the candidate reads or writes, or reads what it writes
  always_comb begin
    logic [TAGW-1:0] age;
    logic            raw_sp, hz;
    age = '0;
    raw_sp = 1'b0;
    hz = 1'b0;
    for (int u = 0; u < 4; u++) begin
      found[u] = 1'b0;  cand[u] = '0;  cand_k[u] = (TAGW+1)'(Q);  blocked[u] = 1'b0;
      for (int o = 0; o < Q; o++) begin
        age = TAGW'(o) - head;
        if (u != 0 && e_v[o] && e_unit[o] == 2'(u) && !e_iss[o] && (TAGW+1)'(age) < cand_k[u]) begin
          found[u] = 1'b1;  cand[u] = TAGW'(o);  cand_k[u] = (TAGW+1)'(age);
        end
      end
      for (int p = 0; p < 3; p++) begin
        c_spr_lo[u][p] = spr_lo[cand[u]][p];  c_spr_hi[u][p] = spr_hi[cand[u]][p];
      end
      c_spw_lo[u] = spw_lo[cand[u]];  c_spw_hi[u] = spw_hi[cand[u]];
      c_acr_lo[u] = acr_lo[cand[u]];  c_acr_hi[u] = acr_hi[cand[u]];
      c_acw_lo[u] = acw_lo[cand[u]];  c_acw_hi[u] = acw_hi[cand[u]];
      c_drr_lo[u] = drr_lo[cand[u]];  c_drr_hi[u] = drr_hi[cand[u]];
      c_drw_lo[u] = drw_lo[cand[u]];  c_drw_hi[u] = drw_hi[cand[u]];
      for (int o = 0; o < Q; o++) begin
        age = TAGW'(o) - head;
        raw_sp = 1'b0;
        for (int p = 0; p < 3; p++) raw_sp = raw_sp | ovsp(spw_lo[o], spw_hi[o], c_spr_lo[u][p], c_spr_hi[u][p]);
        if (e_unit[o] == 2'(u)) begin
          hz = (2'(u) == U_EX) && raw_sp;
        end else begin
          hz = raw_sp || ovsp(spw_lo[o], spw_hi[o], c_spw_lo[u], c_spw_hi[u])
            || ovac(acw_lo[o], acw_hi[o], c_acr_lo[u], c_acr_hi[u]) || ovac(acw_lo[o], acw_hi[o], c_acw_lo[u], c_acw_hi[u])
            || ovac(acr_lo[o], acr_hi[o], c_acw_lo[u], c_acw_hi[u])
            || ov64(drw_lo[o], drw_hi[o], c_drr_lo[u], c_drr_hi[u]) || ov64(drw_lo[o], drw_hi[o], c_drw_lo[u], c_drw_hi[u])
            || ov64(drr_lo[o], drr_hi[o], c_drw_lo[u], c_drw_hi[u]);
          for (int p = 0; p < 3; p++) hz = hz | ovsp(spr_lo[o][p], spr_hi[o][p], c_spw_lo[u], c_spw_hi[u]);
        end
        if (found[u] && e_v[o] && !e_done[o] && (TAGW+1)'(age) < cand_k[u] && hz) blocked[u] = 1'b1;
      end
    end
  end

  assign ld_go  = found[U_LD] && !blocked[U_LD] && ld_free;
  assign st_go  = found[U_ST] && !blocked[U_ST] && st_free;
  assign ex_go  = found[U_EX] && !blocked[U_EX] && ex_free;
  assign ld_tag = cand[U_LD];
  assign st_tag = cand[U_ST];
  assign ex_tag = cand[U_EX];
  assign ld_rs1 = e_rs1[cand[U_LD]];
  assign ld_rs2 = e_rs2[cand[U_LD]];
  assign ld_cfg = e_cfg[cand[U_LD]];
  assign st_rs1 = e_rs1[cand[U_ST]];
  assign st_rs2 = e_rs2[cand[U_ST]];
  assign st_cfg = e_cfg[cand[U_ST]];
  assign ex_rs1 = e_rs1[cand[U_EX]];
  assign ex_rs2 = e_rs2[cand[U_EX]];
  assign ex_x   = e_x[cand[U_EX]];
  assign ex_c   = e_c[cand[U_EX]];
  assign ex_cfg = e_cfg[cand[U_EX]];

  // ---- state ---------------------------------------------------------------------------------
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      head  <= '0;
      tail  <= '0;
      count <= '0;
      for (int k = 0; k < Q; k++) e_v[k] <= 1'b0;
    end else begin
      logic retire;
      retire = count != '0 && e_done[head];
      if (ld_go) e_iss[ld_tag] <= 1'b1;
      if (st_go) begin e_iss[st_tag] <= 1'b1; st_cur <= st_tag; end
      if (ex_go) e_iss[ex_tag] <= 1'b1;
      if (ld_done) e_done[ld_done_tag] <= 1'b1;
      if (st_done) e_done[st_cur] <= 1'b1;
      if (ex_done_a) e_done[ex_done_a_tag] <= 1'b1;
      if (ex_done_b) e_done[ex_done_b_tag] <= 1'b1;
      if (retire) begin
        e_v[head] <= 1'b0;
        head <= head + TAGW'(1);
      end
      if (enq) begin
        e_v[tail]    <= 1'b1;
        e_unit[tail] <= enq_unit;
        e_iss[tail]  <= 1'b0;
        e_done[tail] <= 1'b0;
        e_rs1[tail]  <= enq_rs1;
        e_rs2[tail]  <= enq_rs2;
        e_x[tail]    <= enq_x;
        e_c[tail]    <= enq_c;
        e_cfg[tail]  <= enq_cfg;
        for (int p = 0; p < 3; p++) begin
          spr_lo[tail][p] <= (SPA+1)'(n_spr[p][31:0]);
          spr_hi[tail][p] <= (SPA+1)'(n_spr[p][63:32]);
        end
        spw_lo[tail] <= (SPA+1)'(n_spw[31:0]);   spw_hi[tail] <= (SPA+1)'(n_spw[63:32]);
        acr_lo[tail] <= (ACA+1)'(n_acr[31:0]);   acr_hi[tail] <= (ACA+1)'(n_acr[63:32]);
        acw_lo[tail] <= (ACA+1)'(n_acw[31:0]);   acw_hi[tail] <= (ACA+1)'(n_acw[63:32]);
        drr_lo[tail] <= n_drr[63:0];   drr_hi[tail] <= n_drr[127:64];
        drw_lo[tail] <= n_drw[63:0];   drw_hi[tail] <= n_drw[127:64];
        tail <= tail + TAGW'(1);
      end
      count <= count + (TAGW+1)'(enq) - (TAGW+1)'(retire);
    end
  end

  logic unused;
  assign unused = &{1'b0, e_v[0]};
endmodule
