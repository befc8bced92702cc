// Gemmini-ISA RTL: the top level (command interface, configuration state, local memories, DRAM
// port) of accv's own Gemmini-compatible accelerator. Written for accv from the facts in
// ../shared/reference/gemmini.md; it agrees bit for bit with compilers/gemmini_stream.py's
// StreamMachine on every command that machine accepts (docs/rtl.md, "Gemmini-ISA RTL").
//
// What belongs here: command decode and dispatch, the CONFIG registers (config_ex, three
// config_ld slots, config_st), the PRELOAD latch, the scratchpad and accumulator arrays with their
// port multiplexers, the shared scale unit, and the DRAM port. The units live in gemmini_load.sv
// (MVIN*), gemmini_store.sv (MVOUT), gemmini_ex.sv (COMPUTE_*, with the mesh of gemmini_pe.sv)
// and gemmini_fp.sv (fp32 scale datapath).
//
// Commands (RoCC funct, 64-bit rs1/rs2) execute one at a time: cmd_ready is high while nothing is
// in flight; CONFIG, PRELOAD and FLUSH complete in the cycle they are accepted; MVIN/MVIN2/MVIN3,
// MVOUT and COMPUTE_* run in their unit and `busy` stays high until their last write is done. The
// loop FSMs (funct 8-13, 15-21), config_norm and unknown functs are accepted and ignored.
//
// DRAM port (a simulation memory owned by the testbench, not a bus protocol): a request names a
// byte address (any alignment); a write carries 4*DIM bytes and a byte strobe (byte b goes to
// address + b); a read returns the 4*DIM bytes starting at the address on dram_resp_rdata, in
// request order, with dram_resp_valid, a fixed number of cycles (>= 1, chosen by the testbench)
// after the request. Requests are always accepted (no back-pressure).
//
// Debug: the scratchpad (`spad`, SP_ROWS rows of DIM int8) and the accumulator (`acc`, ACC_ROWS
// rows of DIM int32), lane l at bits [l*w +: w], are verilator public_flat_rw so a testbench can
// set and read them directly; dbg_pe exposes every PE's 20-bit state, row-major.

module gemmini_top #(
  parameter int DIM      = 16,
  parameter int SP_ROWS  = 16384,
  parameter int ACC_ROWS = 1024,
  localparam int SPA = $clog2(SP_ROWS),
  localparam int ACA = $clog2(ACC_ROWS)
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
  // DRAM port
  output logic                  dram_req_valid,
  output logic                  dram_req_write,
  output logic [63:0]           dram_req_addr,
  output logic [DIM*32-1:0]     dram_req_wdata,
  output logic [DIM*4-1:0]      dram_req_wstrb,
  input  logic                  dram_resp_valid,
  input  logic [DIM*32-1:0]     dram_resp_rdata,
  // debug
  output logic [DIM*DIM*20-1:0] dbg_pe
);
  localparam logic [6:0] F_CONFIG = 7'd0, F_MVIN2 = 7'd1, F_MVIN = 7'd2, F_MVOUT = 7'd3,
                         F_COMPUTE_PRELOADED = 7'd4, F_COMPUTE_ACCUMULATED = 7'd5, F_PRELOAD = 7'd6,
                         F_MVIN3 = 7'd14;
  localparam logic [1:0] U_IDLE = 2'd0, U_LOAD = 2'd1, U_STORE = 2'd2, U_EX = 2'd3;

  // ---- local memories --------------------------------------------------------------------------
  logic [DIM*8-1:0]  spad [SP_ROWS] /*verilator public_flat_rw*/;
  logic [DIM*32-1:0] acc  [ACC_ROWS] /*verilator public_flat_rw*/;

  logic              sp_re, sp_we, acc_re, acc_we;
  logic [SPA-1:0]    sp_raddr, sp_waddr;
  logic [ACA-1:0]    acc_raddr, acc_waddr;
  logic [DIM*8-1:0]  sp_rdata, sp_wdata;
  logic [DIM*32-1:0] acc_rdata, acc_wdata;
  logic [DIM-1:0]    sp_wmask, acc_wmask;

  always_ff @(posedge clk) begin
    if (sp_re) sp_rdata <= spad[sp_raddr];
    for (int l = 0; l < DIM; l++) begin
      if (sp_we && sp_wmask[l]) spad[sp_waddr][l*8 +: 8] <= sp_wdata[l*8 +: 8];
    end
  end
  always_ff @(posedge clk) begin
    if (acc_re) acc_rdata <= acc[acc_raddr];
    for (int l = 0; l < DIM; l++) begin
      if (acc_we && acc_wmask[l]) acc[acc_waddr][l*32 +: 32] <= acc_wdata[l*32 +: 32];
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

  // ---- dispatch -------------------------------------------------------------------------------
  logic [1:0]  unit;
  logic [63:0] cur_rs1, cur_rs2;
  logic [1:0]  cur_slot;
  logic        cur_pre;
  logic        start_ld, start_st, start_ex;
  logic        ld_done, st_done, ex_done;
  logic        accept;

  assign cmd_ready = (unit == U_IDLE) && !start_ld && !start_st && !start_ex;
  assign busy      = !cmd_ready;
  assign accept    = cmd_valid && cmd_ready;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      unit     <= U_IDLE;
      start_ld <= 1'b0;
      start_st <= 1'b0;
      start_ex <= 1'b0;
    end else begin
      start_ld <= 1'b0;
      start_st <= 1'b0;
      start_ex <= 1'b0;
      if (accept) begin
        cur_rs1 <= cmd_rs1;
        cur_rs2 <= cmd_rs2;
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
          F_MVIN, F_MVIN2, F_MVIN3: begin
            cur_slot <= (cmd_funct == F_MVIN) ? 2'd0 : (cmd_funct == F_MVIN2) ? 2'd1 : 2'd2;
            start_ld <= 1'b1;
            unit     <= U_LOAD;
          end
          F_MVOUT: begin
            start_st <= 1'b1;
            unit     <= U_STORE;
          end
          F_PRELOAD: begin
            latch_bd <= cmd_rs1;
            latch_c  <= cmd_rs2;
          end
          F_COMPUTE_PRELOADED, F_COMPUTE_ACCUMULATED: begin
            cur_pre  <= cmd_funct == F_COMPUTE_PRELOADED;
            start_ex <= 1'b1;
            unit     <= U_EX;
          end
          default: ;  // FLUSH, loop FSMs, unknown: nothing to do
        endcase
      end
      if (ld_done || st_done || ex_done) unit <= U_IDLE;
    end
  end

  // ---- units ----------------------------------------------------------------------------------
  logic [DIM*32-1:0] scl_x, ld_scl_x, st_scl_x;
  logic [31:0]       scl_scale, ld_scl_scale, st_scl_scale;
  logic [DIM*8-1:0]  scl_q;

  gemmini_scaler #(.DIM(DIM)) u_scaler (.x(scl_x), .scale(scl_scale), .q(scl_q));

  logic              ld_req_valid, st_req_valid;
  logic [63:0]       ld_req_addr, st_req_addr;
  logic [DIM*32-1:0] st_req_wdata;
  logic [DIM*4-1:0]  st_req_wstrb;
  logic              ld_sp_we, ld_acc_re, ld_acc_we;
  logic [SPA-1:0]    ld_sp_waddr;
  logic [ACA-1:0]    ld_acc_raddr, ld_acc_waddr;
  logic [DIM*8-1:0]  ld_sp_wdata;
  logic [DIM*32-1:0] ld_acc_wdata;
  logic [DIM-1:0]    ld_sp_wmask, ld_acc_wmask;
  logic              st_sp_re, st_acc_re;
  logic [SPA-1:0]    st_sp_raddr;
  logic [ACA-1:0]    st_acc_raddr;
  logic              ex_sp_re, ex_sp_we, ex_acc_re, ex_acc_we;
  logic [SPA-1:0]    ex_sp_raddr, ex_sp_waddr;
  logic [ACA-1:0]    ex_acc_raddr, ex_acc_waddr;
  logic [DIM*8-1:0]  ex_sp_wdata;
  logic [DIM*32-1:0] ex_acc_wdata;
  logic [DIM-1:0]    ex_sp_wmask, ex_acc_wmask;

  gemmini_load #(.DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS)) u_load (
    .clk(clk), .rst_n(rst_n), .start(start_ld), .rs1(cur_rs1), .rs2(cur_rs2),
    .cfg_shrunk(ld_shrunk[cur_slot]), .cfg_block_stride(ld_block_stride[cur_slot]),
    .cfg_scale(ld_scale[cur_slot]), .cfg_stride(ld_stride[cur_slot]), .done(ld_done),
    .dram_req_valid(ld_req_valid), .dram_req_addr(ld_req_addr),
    .dram_resp_valid(dram_resp_valid), .dram_resp_rdata(dram_resp_rdata),
    .scl_x(ld_scl_x), .scl_scale(ld_scl_scale), .scl_q(scl_q),
    .sp_we(ld_sp_we), .sp_waddr(ld_sp_waddr), .sp_wdata(ld_sp_wdata), .sp_wmask(ld_sp_wmask),
    .acc_re(ld_acc_re), .acc_raddr(ld_acc_raddr), .acc_rdata(acc_rdata),
    .acc_we(ld_acc_we), .acc_waddr(ld_acc_waddr), .acc_wdata(ld_acc_wdata), .acc_wmask(ld_acc_wmask)
  );

  gemmini_store #(.DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS)) u_store (
    .clk(clk), .rst_n(rst_n), .start(start_st), .rs1(cur_rs1), .rs2(cur_rs2),
    .cfg_relu(st_relu), .cfg_stride(st_stride), .cfg_scale(st_scale), .done(st_done),
    .dram_req_valid(st_req_valid), .dram_req_addr(st_req_addr), .dram_req_wdata(st_req_wdata),
    .dram_req_wstrb(st_req_wstrb),
    .scl_x(st_scl_x), .scl_scale(st_scl_scale), .scl_q(scl_q),
    .sp_re(st_sp_re), .sp_raddr(st_sp_raddr), .sp_rdata(sp_rdata),
    .acc_re(st_acc_re), .acc_raddr(st_acc_raddr), .acc_rdata(acc_rdata)
  );

  gemmini_ex #(.DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS)) u_ex (
    .clk(clk), .rst_n(rst_n), .start(start_ex), .preloaded(cur_pre),
    .a_word(cur_rs1), .y_word(cur_rs2), .x_word(latch_bd), .c_word(latch_c),
    .cfg_ws(ex_ws), .cfg_relu(ex_relu), .cfg_at(ex_at), .cfg_bt(ex_bt), .cfg_a_stride(ex_a_stride),
    .cfg_sys_shift(ex_sys_shift), .cfg_c_stride(ex_c_stride), .done(ex_done),
    .sp_re(ex_sp_re), .sp_raddr(ex_sp_raddr), .sp_rdata(sp_rdata),
    .sp_we(ex_sp_we), .sp_waddr(ex_sp_waddr), .sp_wdata(ex_sp_wdata), .sp_wmask(ex_sp_wmask),
    .acc_re(ex_acc_re), .acc_raddr(ex_acc_raddr), .acc_rdata(acc_rdata),
    .acc_we(ex_acc_we), .acc_waddr(ex_acc_waddr), .acc_wdata(ex_acc_wdata), .acc_wmask(ex_acc_wmask),
    .pe_state(dbg_pe)
  );

  // ---- port multiplexers (one unit runs at a time) --------------------------------------------
  always_comb begin
    scl_x          = (unit == U_STORE) ? st_scl_x : ld_scl_x;
    scl_scale      = (unit == U_STORE) ? st_scl_scale : ld_scl_scale;
    dram_req_valid = (unit == U_LOAD) ? ld_req_valid : (unit == U_STORE) ? st_req_valid : 1'b0;
    dram_req_write = unit == U_STORE;
    dram_req_addr  = (unit == U_STORE) ? st_req_addr : ld_req_addr;
    dram_req_wdata = st_req_wdata;
    dram_req_wstrb = (unit == U_STORE) ? st_req_wstrb : '0;
    case (unit)
      U_LOAD: begin
        sp_re = 1'b0;      sp_raddr = ex_sp_raddr;
        sp_we = ld_sp_we;  sp_waddr = ld_sp_waddr;  sp_wdata = ld_sp_wdata;  sp_wmask = ld_sp_wmask;
        acc_re = ld_acc_re;  acc_raddr = ld_acc_raddr;
        acc_we = ld_acc_we;  acc_waddr = ld_acc_waddr;  acc_wdata = ld_acc_wdata;  acc_wmask = ld_acc_wmask;
      end
      U_STORE: begin
        sp_re = st_sp_re;  sp_raddr = st_sp_raddr;
        sp_we = 1'b0;      sp_waddr = ex_sp_waddr;  sp_wdata = ex_sp_wdata;  sp_wmask = ex_sp_wmask;
        acc_re = st_acc_re;  acc_raddr = st_acc_raddr;
        acc_we = 1'b0;       acc_waddr = ex_acc_waddr;  acc_wdata = ex_acc_wdata;  acc_wmask = ex_acc_wmask;
      end
      default: begin
        sp_re = ex_sp_re;  sp_raddr = ex_sp_raddr;
        sp_we = ex_sp_we;  sp_waddr = ex_sp_waddr;  sp_wdata = ex_sp_wdata;  sp_wmask = ex_sp_wmask;
        acc_re = ex_acc_re;  acc_raddr = ex_acc_raddr;
        acc_we = ex_acc_we;  acc_waddr = ex_acc_waddr;  acc_wdata = ex_acc_wdata;  acc_wmask = ex_acc_wmask;
      end
    endcase
  end
endmodule
