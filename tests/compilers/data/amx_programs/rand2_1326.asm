.target amx
.input 0 @64 s32[4,4,5]
.output 0 @384 s32[4,4,5]
.const @704 80ffffffae956658fffffffffeffff7f55c789ee6ecc79fd23c5d585ccdd42723f0000009f2c0ff541d871bc80ffffff80fffffffeffff7ffeffffff1f000000
.const @768 02000000feffff7ff72935eb1bd9753b0d7daf8da0155a8c5ff369660100008048cdb91e02000000412f45cc000000000100000011609c8c20000000b9b4cb19
.const @832 133bf364a3f6dc4c74043fd86fe43bb602000000ffffff7f0981b2e9721ec66b88553f8210bc04a800000080ce76c8942317e9ae9d12d07b200000005c32182a
.const @896 099b582851b51be74848c6805bb657c2a6b935b47319a89a7612508cfeffffff07000000fefffffff8ffffff000000805fea6434200000002ba1abf5fb2b1af9
.const @960 7f00000001000080159b17bf1f0000003f000000062592f5e9068ebb0290e0737f000000f027d1c901000080400000008150a42970df0792ee00295e7f000000
vmovups_load(dst=0, addr=64)
vmovups_load(dst=1, addr=960)
vpsubd(dst=0, a=0, b=1)
vmovups_store(src=0, addr=384)
vmovups_load(dst=0, addr=128)
vmovups_load(dst=1, addr=896)
vpsubd(dst=0, a=0, b=1)
vmovups_store(src=0, addr=448)
vmovups_load(dst=0, addr=192)
vmovups_load(dst=1, addr=832)
vpsubd(dst=0, a=0, b=1)
vmovups_store(src=0, addr=512)
vmovups_load(dst=0, addr=256)
vmovups_load(dst=1, addr=768)
vpsubd(dst=0, a=0, b=1)
vmovups_store(src=0, addr=576)
vmovups_load(dst=0, addr=320)
vmovups_load(dst=1, addr=704)
vpsubd(dst=0, a=0, b=1)
vmovups_store(src=0, addr=640)
