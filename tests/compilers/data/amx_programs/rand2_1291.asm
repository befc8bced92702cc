.target amx
.input 0 @64 s8[3,4]
.input 1 @128 s8[3,4]
.input 2 @192 s32[3,4,2]
.output 0 @320 s32[3,12,2]
.const @640 4236caa40100008059463ce1bf626318
.const @656 fcd46af5763a5b1c9dd45689ffffffff
.const @672 3ebb71b9010000805e070722c0d032f7
.const @688 4282a0cfed8ba51a07000000f8ffffff
.const @736 f8ffffff85813eceffffff7fa3c70598
.const @752 7f000000a138278f28258aa4feffff7f
.const @768 eb7e18eaffffffff1f000000feffffff
.const @784 ffffffff40000000080000002eee44bb
.const @832 894e8212ff0000007f0000007f000000
.const @848 7f0000000000008057ab5ea65ae8ae50
.const @864 0700000020000000527f215b8eaf54d7
.const @880 d9154f1f080000000200000080ffffff
vmovups_load(dst=0, addr=192)
vmovdqu8_store(n=16, src=0, addr=704)
vmovups_load(dst=0, addr=208)
vmovdqu8_store(n=16, src=0, addr=720)
tileloadd(rows=3, colsb=48, stride=48, t=0, addr=640)
tilestored(rows=3, colsb=48, stride=48, t=0, addr=320)
vmovups_load(dst=0, addr=224)
vmovdqu8_store(n=16, src=0, addr=800)
vmovdqu8_load(n=16, dst=0, addr=240)
vmovdqu8_store(n=16, src=0, addr=816)
vmovdqu8_load(n=16, dst=0, addr=256)
vmovdqu8_store(n=16, src=0, addr=896)
vmovdqu8_load(n=16, dst=0, addr=272)
vmovdqu8_store(n=16, src=0, addr=912)
tileloadd(rows=3, colsb=48, stride=48, t=0, addr=784)
tilestored(rows=3, colsb=48, stride=48, t=0, addr=464)
