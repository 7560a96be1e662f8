import FCCore
print(Arbiter().snapshot().nodeCount)
