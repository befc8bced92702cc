// Gemmini-ISA RTL: the top level (command interface, configuration state, the command queue, local
// memories, DRAM ports) of accv's own Gemmini-compatible accelerator. Written for accv from the
// facts in ../shared/reference/gemmini.md; it agrees bit for bit with
// compilers/gemmini_stream.py's StreamMachine on every command that machine accepts (docs/rtl.md,
// "Gemmini-ISA RTL").
//
// What belongs here: command decode, the CONFIG registers (config_ex, three config_ld slots,
// config_st), the PRELOAD latch, the command queue with its dependency checks (gemmini_queue.sv
// decodes what each command reads and writes), the scratchpad and accumulator arrays with one
// port per use, the two scale units and the DRAM ports. The units live in gemmini_load.sv
// (MVIN*), gemmini_store.sv (MVOUT), gemmini_ex.sv (COMPUTE_*, with the mesh of gemmini_pe.sv)
// and gemmini_fp.sv (fp32 scale datapath).
//
// Decoupled execution (Gemmini's reservation station): CONFIG and PRELOAD take effect when they
// are accepted (a command carries the configuration and preload words it was issued under);
// MVIN*, MVOUT and COMPUTE_* enter an in-order queue of Q entries. Each unit (load, execute,
// store) takes its oldest waiting command as soon as the unit can accept it and no older
// unfinished command touches the same scratchpad rows, accumulator rows or DRAM bytes with a
// write on either side (read after write, write after read, write after write). Two computes
// are ordered by the execute unit itself except when the later one reads scratchpad rows the
// earlier one writes. Every command therefore sees the memories exactly as the sequential
// order leaves them, and the end state equals StreamMachine's; the cycle count is that of the
// overlap. cmd_ready is high while the queue has room; `busy` while it holds a command. FLUSH,
// the loop FSMs (funct 8-13, 15-21), config_norm and unknown functs are accepted and ignored.
//
// DRAM ports (a simulation memory owned by the testbench, not a bus protocol): a read request
// names a byte address (any alignment) and gets the 4*DIM bytes starting there on
// dram_resp_rdata, in request order, with dram_resp_valid, a fixed number of cycles (>= 1, chosen
// by the testbench) after the request; a write request (its own port, so loads and stores
// overlap) carries 4*DIM bytes and a byte strobe (byte b goes to address + b) and lands in the
// cycle it is made. Requests are always accepted (no back-pressure).
//
// Debug: the scratchpad (`spad`, SP_ROWS rows of DIM int8) and the accumulator (`acc`, ACC_ROWS
// rows of DIM int32), lane l at bits [l*w +: w], are verilator public_flat_rw so a testbench can
// set and read them directly; dbg_pe exposes every PE's 20-bit state, row-major.

module gemmini_top #(
  parameter int DIM      = 16,
  parameter int SP_ROWS  = 16384,
  parameter int ACC_ROWS = 1024,
  parameter int Q        = 16,
  localparam int SPA = $clog2(SP_ROWS),
  localparam int ACA = $clog2(ACC_ROWS),
  localparam int TAGW = $clog2(Q)
) (
  input  logic                  clk,
  input  logic                  rst_n,
  // command interface (RoCC-style)
  input  logic                  cmd_valid,
  output logic                  cmd_ready,
  input  logic [6:0]            cmd_funct,
  input  logic [63:0]           cmd_rs1,
  input  logic [63:0]           cmd_rs2,
  output logic                  busy,
  // DRAM read port
  output logic                  dram_rd_valid,
  output logic [63:0]           dram_rd_addr,
  input  logic                  dram_resp_valid,
  input  logic [DIM*32-1:0]     dram_resp_rdata,
  // DRAM write port
  output logic                  dram_wr_valid,
  output logic [63:0]           dram_wr_addr,
  output logic [DIM*32-1:0]     dram_wr_wdata,
  output logic [DIM*4-1:0]      dram_wr_wstrb,
  // debug
  output logic [DIM*DIM*20-1:0] dbg_pe
);
  localparam logic [6:0] F_CONFIG = 7'd0, F_MVIN2 = 7'd1, F_MVIN = 7'd2, F_MVOUT = 7'd3,
                         F_COMPUTE_PRELOADED = 7'd4, F_COMPUTE_ACCUMULATED = 7'd5, F_PRELOAD = 7'd6,
                         F_MVIN3 = 7'd14;

  // ---- local memories --------------------------------------------------------------------------
  logic [DIM*8-1:0]  spad [SP_ROWS] /*verilator public_flat_rw*/;
  logic [DIM*32-1:0] acc  [ACC_ROWS] /*verilator public_flat_rw*/;

  // ports: scratchpad writes (load, execute), reads (execute x3, store); accumulator writes
  // (load, execute), reads (load, execute, store)
  logic              ld_sp_we, ex_sp_we, st_sp_re, ld_acc_we, ex_acc_we, ld_acc_re, ex_acc_re, st_acc_re;
  logic [2:0]        ex_sp_re;
  logic [SPA-1:0]    ld_sp_waddr, ex_sp_waddr, st_sp_raddr;
  logic [3*SPA-1:0]  ex_sp_raddr;
  logic [ACA-1:0]    ld_acc_waddr, ex_acc_waddr, ld_acc_raddr, ex_acc_raddr, st_acc_raddr;
  logic [DIM*8-1:0]  ld_sp_wdata, ex_sp_wdata, st_sp_rdata;
  logic [3*DIM*8-1:0] ex_sp_rdata;
  logic [DIM*32-1:0] ld_acc_wdata, ex_acc_wdata, ld_acc_rdata, ex_acc_rdata, st_acc_rdata;
  logic [DIM-1:0]    ld_sp_wmask, ex_sp_wmask, ld_acc_wmask, ex_acc_wmask;

  always_ff @(posedge clk) begin
    for (int p = 0; p < 3; p++) begin
      if (ex_sp_re[p]) ex_sp_rdata[p*DIM*8 +: DIM*8] <= spad[ex_sp_raddr[p*SPA +: SPA]];
    end
    if (st_sp_re) st_sp_rdata <= spad[st_sp_raddr];
    for (int l = 0; l < DIM; l++) begin
      if (ld_sp_we && ld_sp_wmask[l]) spad[ld_sp_waddr][l*8 +: 8] <= ld_sp_wdata[l*8 +: 8];
      if (ex_sp_we && ex_sp_wmask[l]) spad[ex_sp_waddr][l*8 +: 8] <= ex_sp_wdata[l*8 +: 8];
    end
  end
  always_ff @(posedge clk) begin
    if (ld_acc_re) ld_acc_rdata <= acc[ld_acc_raddr];
    if (ex_acc_re) ex_acc_rdata <= acc[ex_acc_raddr];
    if (st_acc_re) st_acc_rdata <= acc[st_acc_raddr];
    for (int l = 0; l < DIM; l++) begin
      if (ld_acc_we && ld_acc_wmask[l]) acc[ld_acc_waddr][l*32 +: 32] <= ld_acc_wdata[l*32 +: 32];
      if (ex_acc_we && ex_acc_wmask[l]) acc[ex_acc_waddr][l*32 +: 32] <= ex_acc_wdata[l*32 +: 32];
    end
  end

  // ---- configuration state and the preload latch ----------------------------------------------
  logic        ex_ws, ex_relu, ex_at, ex_bt;
  logic [15:0] ex_a_stride, ex_c_stride;
  logic [31:0] ex_sys_shift;
  logic        ld_shrunk [3];
  logic [15:0] ld_block_stride [3];
  logic [31:0] ld_scale [3];
  logic [63:0] ld_stride [3];
  logic        st_relu;
  logic [31:0] st_stride, st_scale;
  logic [63:0] latch_bd, latch_c;

  // ---- the command queue ----------------------------------------------------------------------
  logic            q_full, enq;
  logic [1:0]      enq_unit;
  logic [1:0]      enq_slot;
  logic            ld_go, st_go, ex_go;
  logic [TAGW-1:0] ld_tag, st_tag, ex_tag;
  logic            ld_done, st_done, ex_done_a, ex_done_b, ex_ready, ex_empty;
  logic [TAGW-1:0] ex_done_a_tag, ex_done_b_tag, ld_done_tag;
  logic            ld_ready;
  (* mem2reg *) logic [63:0] go_rs1 [3], go_rs2 [3];
  logic [63:0]     go_x, go_c;
  (* mem2reg *) logic [191:0] go_cfg [3];
  logic            st_busy;

  always_comb begin
    enq_slot = (cmd_funct == F_MVIN) ? 2'd0 : (cmd_funct == F_MVIN2) ? 2'd1 : 2'd2;
    case (cmd_funct)
      F_MVIN, F_MVIN2, F_MVIN3:                     enq_unit = 2'd1;
      F_MVOUT:                                      enq_unit = 2'd2;
      F_COMPUTE_PRELOADED, F_COMPUTE_ACCUMULATED:   enq_unit = 2'd3;
      default:                                      enq_unit = 2'd0;
    endcase
  end
  assign cmd_ready = !q_full;
  assign enq       = cmd_valid && cmd_ready && enq_unit != 2'd0;

  // the configuration a command runs under (bit fields in gemmini_queue.sv's header)
  logic [191:0] enq_cfg;
  always_comb begin
    enq_cfg = '0;
    case (enq_unit)
      2'd1: enq_cfg = {ld_stride[enq_slot], ld_scale[enq_slot], ld_block_stride[enq_slot], 15'd0,
                       ld_shrunk[enq_slot], 64'd0};
      2'd2: enq_cfg = {63'd0, st_relu, st_scale, st_stride, 64'd0};
      default: enq_cfg = {32'd0, ex_sys_shift, ex_c_stride, ex_a_stride, 27'd0,
                          cmd_funct == F_COMPUTE_PRELOADED, ex_ws, ex_relu, ex_at, ex_bt, 64'd0};
    endcase
  end

  gemmini_queue #(.DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .Q(Q)) u_queue (
    .clk(clk), .rst_n(rst_n), .full(q_full), .busy(busy),
    .enq(enq), .enq_unit(enq_unit), .enq_rs1(cmd_rs1), .enq_rs2(cmd_rs2), .enq_x(latch_bd),
    .enq_c(latch_c), .enq_cfg(enq_cfg),
    .ld_free(ld_ready), .st_free(!st_busy || st_done), .ex_free(ex_ready),
    .ld_go(ld_go), .st_go(st_go), .ex_go(ex_go), .ld_tag(ld_tag), .st_tag(st_tag), .ex_tag(ex_tag),
    .ld_rs1(go_rs1[0]), .ld_rs2(go_rs2[0]), .ld_cfg(go_cfg[0]),
    .st_rs1(go_rs1[1]), .st_rs2(go_rs2[1]), .st_cfg(go_cfg[1]),
    .ex_rs1(go_rs1[2]), .ex_rs2(go_rs2[2]), .ex_x(go_x), .ex_c(go_c), .ex_cfg(go_cfg[2]),
    .ld_done(ld_done), .ld_done_tag(ld_done_tag), .st_done(st_done), .ex_done_a(ex_done_a), .ex_done_a_tag(ex_done_a_tag),
    .ex_done_b(ex_done_b), .ex_done_b_tag(ex_done_b_tag)
  );

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      st_busy <= 1'b0;
    end else begin
      if (st_done) st_busy <= 1'b0;
      if (st_go)   st_busy <= 1'b1;
      if (cmd_valid && cmd_ready) begin
        case (cmd_funct)
          F_CONFIG: begin
            case (cmd_rs1[1:0])
              2'd0: begin
                ex_ws        <= cmd_rs1[2];
                ex_relu      <= cmd_rs1[4:3] == 2'd1;
                ex_at        <= cmd_rs1[8];
                ex_bt        <= cmd_rs1[9];
                ex_a_stride  <= cmd_rs1[31:16];
                ex_sys_shift <= cmd_rs2[31:0];
                ex_c_stride  <= cmd_rs2[63:48];
              end
              2'd1: begin
                if (cmd_rs1[4:3] != 2'd3) begin
                  ld_shrunk[cmd_rs1[4:3]]       <= cmd_rs1[2];
                  ld_block_stride[cmd_rs1[4:3]] <= cmd_rs1[31:16];
                  ld_scale[cmd_rs1[4:3]]        <= cmd_rs1[63:32];
                  ld_stride[cmd_rs1[4:3]]       <= cmd_rs2;
                end
              end
              2'd2: begin
                st_relu   <= cmd_rs1[3:2] == 2'd1;
                st_stride <= cmd_rs2[31:0];
                st_scale  <= cmd_rs2[63:32];
              end
              default: ;  // config_norm: not modelled
            endcase
          end
          F_PRELOAD: begin
            latch_bd <= cmd_rs1;
            latch_c  <= cmd_rs2;
          end
          default: ;  // queued (MVIN*, MVOUT, COMPUTE_*) or nothing to do (FLUSH, loops, unknown)
        endcase
      end
    end
  end

  // ---- units ----------------------------------------------------------------------------------
  logic [DIM*32-1:0] ld_scl_x, st_scl_x;
  logic [31:0]       ld_scl_scale, st_scl_scale;
  logic [DIM*8-1:0]  ld_scl_q, st_scl_q;

  gemmini_scaler #(.DIM(DIM)) u_ld_scaler (.x(ld_scl_x), .scale(ld_scl_scale), .q(ld_scl_q));
  gemmini_scaler #(.DIM(DIM)) u_st_scaler (.x(st_scl_x), .scale(st_scl_scale), .q(st_scl_q));

  gemmini_load #(.DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .TAGW(TAGW)) u_load (
    .clk(clk), .rst_n(rst_n), .start(ld_go), .ready(ld_ready), .tag(ld_tag), .rs1(go_rs1[0]), .rs2(go_rs2[0]),
    .cfg_shrunk(go_cfg[0][64]), .cfg_block_stride(go_cfg[0][95:80]),
    .cfg_scale(go_cfg[0][127:96]), .cfg_stride(go_cfg[0][191:128]), .done(ld_done), .done_tag(ld_done_tag),
    .dram_req_valid(dram_rd_valid), .dram_req_addr(dram_rd_addr),
    .dram_resp_valid(dram_resp_valid), .dram_resp_rdata(dram_resp_rdata),
    .scl_x(ld_scl_x), .scl_scale(ld_scl_scale), .scl_q(ld_scl_q),
    .sp_we(ld_sp_we), .sp_waddr(ld_sp_waddr), .sp_wdata(ld_sp_wdata), .sp_wmask(ld_sp_wmask),
    .acc_re(ld_acc_re), .acc_raddr(ld_acc_raddr), .acc_rdata(ld_acc_rdata),
    .acc_we(ld_acc_we), .acc_waddr(ld_acc_waddr), .acc_wdata(ld_acc_wdata), .acc_wmask(ld_acc_wmask)
  );

  gemmini_store #(.DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS)) u_store (
    .clk(clk), .rst_n(rst_n), .start(st_go), .rs1(go_rs1[1]), .rs2(go_rs2[1]),
    .cfg_relu(go_cfg[1][128]), .cfg_stride(go_cfg[1][95:64]), .cfg_scale(go_cfg[1][127:96]),
    .done(st_done),
    .dram_req_valid(dram_wr_valid), .dram_req_addr(dram_wr_addr), .dram_req_wdata(dram_wr_wdata),
    .dram_req_wstrb(dram_wr_wstrb),
    .scl_x(st_scl_x), .scl_scale(st_scl_scale), .scl_q(st_scl_q),
    .sp_re(st_sp_re), .sp_raddr(st_sp_raddr), .sp_rdata(st_sp_rdata),
    .acc_re(st_acc_re), .acc_raddr(st_acc_raddr), .acc_rdata(st_acc_rdata)
  );

  gemmini_ex #(.DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .TAGW(TAGW)) u_ex (
    .clk(clk), .rst_n(rst_n), .start(ex_go), .ready(ex_ready), .tag(ex_tag),
    .preloaded(go_cfg[2][68]),
    .a_word(go_rs1[2]), .y_word(go_rs2[2]), .x_word(go_x), .c_word(go_c),
    .cfg_ws(go_cfg[2][67]), .cfg_relu(go_cfg[2][66]), .cfg_at(go_cfg[2][65]), .cfg_bt(go_cfg[2][64]),
    .cfg_a_stride(go_cfg[2][111:96]), .cfg_sys_shift(go_cfg[2][159:128]), .cfg_c_stride(go_cfg[2][127:112]),
    .done_a(ex_done_a), .done_a_tag(ex_done_a_tag), .done_b(ex_done_b), .done_b_tag(ex_done_b_tag),
    .empty(ex_empty),
    .sp_re(ex_sp_re), .sp_raddr(ex_sp_raddr), .sp_rdata(ex_sp_rdata),
    .sp_we(ex_sp_we), .sp_waddr(ex_sp_waddr), .sp_wdata(ex_sp_wdata), .sp_wmask(ex_sp_wmask),
    .acc_re(ex_acc_re), .acc_raddr(ex_acc_raddr), .acc_rdata(ex_acc_rdata),
    .acc_we(ex_acc_we), .acc_waddr(ex_acc_waddr), .acc_wdata(ex_acc_wdata), .acc_wmask(ex_acc_wmask),
    .pe_state(dbg_pe)
  );
endmodule
